"""ClickHouse clients of analysts' SQL's own, apart from the store's client and its lock.

The store serialises its calls on one client behind one lock (``ClickHouseStore``): an
admin's query run there held every write of the node (the writer's inserts, the
change log, the settings) until it ended, 164 s once. So ``/admin/v1/sql`` runs on
clients of its own: chDB 4 runs queries of separate connection handles on the same
data path concurrently (one engine per path, a handle per client, no engine-wide
lock), and a ClickHouse server gets HTTP clients, each with its own session. Up to
``size`` queries run at once, one per client; one more waits for a free client, at
most ``wait_s``, then ``SqlBusy`` (docs/operations.md#admin-sql).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.query import QueryResult

SQL_SESSIONS = 4  # queries of different tenants at once; one tenant runs one (recall_api)


class SqlBusy(RuntimeError):
    """Every SQL client is running a query; the message says how long it waited."""


class SqlSessions:
    """A small pool of clients made by ``factory`` on first need, reused afterwards."""

    def __init__(self, factory: Callable[[], Client], size: int = SQL_SESSIONS):
        self._factory = factory
        self._free: queue.LifoQueue[Client] = queue.LifoQueue()
        self._lock = threading.Lock()
        self._made = 0
        self._size = size
        self._all: list[Client] = []

    def query(self, sql: str, settings: dict[str, object] | None, wait_s: float) -> QueryResult:
        """``sql`` on a free client; waits at most ``wait_s`` for one."""
        client = self._take(wait_s)
        try:
            return client.query(sql, settings=settings)
        finally:
            self._free.put(client)

    def _take(self, wait_s: float) -> Client:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            if self._made < self._size:
                client = self._factory()
                self._made += 1
                self._all.append(client)
                return client
        try:
            return self._free.get(timeout=wait_s)
        except queue.Empty:
            raise SqlBusy(f"all {self._size} SQL sessions stayed busy for {wait_s:g} s") from None

    def close(self) -> None:
        with self._lock:
            clients, self._all, self._made = self._all, [], 0
            self._free = queue.LifoQueue()
        for client in clients:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing is best effort, the engine lives on
                pass
