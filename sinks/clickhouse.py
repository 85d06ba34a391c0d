"""ClickHouse: memory metadata, the immutable change log and switches
(docs/architecture.md#stores).

Embedded (``chdb:///abs/dir``) goes through clickhouse-connect's chDB interface; a
server (``http://host:8123``) through its HTTP interface — the same calls either way.
chDB allows one data directory per process, so embedded clients are shared per path.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, urlparse

import clickhouse_connect
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.summary import QuerySummary

from core.settings import Settings
from core.sql_guard import one_statement, tenant_sql
from core.sql_limits import limit_settings, safe_error
from memstream.schemas.ch_layout import CLUSTER_SETTINGS, Layout
from memstream.schemas.storage import (
    SCHEMA_VERSION,
    SETTINGS_TABLE,
    SQL_TABLES,
    TENANT_TABLES,
    clickhouse_ddl,
    settings_done,
    settings_rebuild,
)
from memstream.schemas.tenants import check_tenant
from sinks.errors import SchemaMismatch, StoreUnavailable
from sinks.sql_sessions import SqlSessions

_EMBEDDED: dict[str, Client] = {}
_EMBEDDED_LOCK = threading.Lock()
# Server settings of the embedded engine. ClickHouse's global thread pool keeps up to
# max_thread_pool_free_size idle threads (a server's default: 1,000), and every thread
# that ran a query keeps /proc/self/task/<tid>/{stat,schedstat,io} open (its per-thread
# counters): with the default, the node's threads and open files grew to each burst's
# high-water mark (merges, mutations and part cleaning borrow pool threads) and stayed.
# 16 idle threads cover the ~13 that chDB's own pools hold; a burst's extra threads
# exit when it ends. The sized-for-many-cores pools are cut to this tier's scale too.
ENGINE_SERVER_SETTINGS = {
    "max_thread_pool_free_size": 16,
    "max_parts_cleaning_thread_pool_size": 4,
    "max_active_parts_loading_thread_pool_size": 4,
    "max_outdated_parts_loading_thread_pool_size": 4,
    "max_io_thread_pool_size": 8,
    "max_io_thread_pool_free_size": 2,
    "max_prefixes_deserialization_thread_pool_size": 4,
    "max_format_parsing_thread_pool_size": 4,
}
_ENGINE_METRICS = (
    "MemoryTracking",
    "MarkCacheBytes",
    "PrimaryIndexCacheBytes",
    "UncompressedCacheBytes",
    "QueryConditionCacheBytes",
    "QueryCacheBytes",
    "CompiledExpressionCacheBytes",
    "MMapCacheCells",
    "GlobalThread",
    "GlobalThreadActive",
)


def _connect(url: str, user: str, password: str) -> Client:
    parsed = urlparse(url)
    if parsed.scheme == "chdb":
        path = str(Path(parsed.path).resolve())
        with _EMBEDDED_LOCK:
            if path not in _EMBEDDED:
                Path(path).mkdir(parents=True, exist_ok=True)
                _import_chdb()
                _EMBEDDED[path] = clickhouse_connect.get_client(
                    interface="chdb", path=path, chdb_options=ENGINE_SERVER_SETTINGS
                )
            return _EMBEDDED[path]
    return clickhouse_connect.get_client(**server_kwargs(url, user, password))


def _import_chdb() -> None:
    """Import chDB so that its first engine starts with ``ENGINE_SERVER_SETTINGS``.

    ``import chdb`` starts a throw-away in-memory engine (to read its version), and that
    first engine sizes the process's thread pools for good: a later engine's
    ``max_thread_pool_free_size`` etc. are accepted but never applied (chDB 4.4's
    ``GlobalThreadPool::initialize`` returns when the pool exists). That engine reads a
    ``config.xml`` in the working directory, so the import runs in a directory holding
    one (chDB's own import changes directory the same way).
    """
    if "chdb" in sys.modules:
        return
    entries = "".join(f"<{k}>{v}</{k}>" for k, v in ENGINE_SERVER_SETTINGS.items())
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="memstream-chdb-") as conf_dir:
        Path(conf_dir, "config.xml").write_text(f"<clickhouse>{entries}</clickhouse>\n")
        os.chdir(conf_dir)
        try:
            import chdb  # noqa: F401
        finally:
            os.chdir(cwd)


_TLS_QUERY = ("ca_cert", "client_cert", "client_cert_key", "server_host_name")


def server_kwargs(url: str, user: str, password: str) -> dict[str, Any]:
    """clickhouse-connect arguments for a server URL.

    ``https://`` is TLS; its query may name ``ca_cert`` (a PEM file, or ``certifi``),
    ``client_cert`` / ``client_cert_key`` (mutual TLS), ``server_host_name`` and
    ``verify=false`` (not for production).
    """
    parsed = urlparse(url)
    secure = parsed.scheme == "https"
    kwargs: dict[str, Any] = {
        "host": parsed.hostname or "127.0.0.1",
        "port": parsed.port or (8443 if secure else 8123),
        "username": user,
        "password": password,
        "secure": secure,
        "connect_timeout": 3,
        "send_receive_timeout": 30,
    }
    query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    unknown = sorted(set(query) - {*_TLS_QUERY, "verify"})
    if unknown or (query and not secure):
        raise ValueError(f"clickhouse_url: unsupported query {', '.join(unknown) or parsed.query}")
    kwargs |= {k: query[k] for k in _TLS_QUERY if k in query}
    if "verify" in query:
        kwargs["verify"] = query["verify"].lower() not in ("0", "false", "no")
    return kwargs


def _bound(parameters: Mapping[str, object] | None) -> dict[str, object] | None:
    """A query's ``{name:Type}`` values as the driver takes them (a dict of its own)."""
    return None if parameters is None else dict(parameters)


class SqlFailed(ValueError):
    """ClickHouse refused or stopped an analyst's query; the message quotes no SQL."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


class ClickHouseStore:
    """Thin, thread-safe wrapper: DDL at setup, columnar batch inserts, parameterized reads."""

    def __init__(
        self,
        url: str,
        database: str,
        user: str = "default",
        password: str = "",
        cluster: str = "",
    ):
        if cluster and url.startswith("chdb://"):
            raise ValueError("clickhouse_cluster: needs a ClickHouse server URL, not chDB")
        self.url = url
        self.database = database
        # Queries name ``{database}.<table>`` in both layouts; mutations go to
        # ``layout.mutate(<table>)`` (the local tables ON CLUSTER on a cluster).
        self.layout = Layout(database, cluster)
        self._user = user
        self._password = password
        self._client: Client | None = None
        self._lock = threading.Lock()
        self._settings = dict(CLUSTER_SETTINGS) if cluster else None  # sent with every call
        self._sql: SqlSessions | None = None  # analysts' SQL: clients of its own

    @classmethod
    def from_settings(cls, s: Settings) -> ClickHouseStore:
        """The store ``s`` names: its server (``clickhouse_url``), else the embedded chDB."""
        user, password = s.clickhouse_user, s.clickhouse_password.get_secret_value()
        return cls(s.clickhouse_target, s.clickhouse_database, user, password, s.clickhouse_cluster)

    @property
    def embedded(self) -> bool:
        return self.url.startswith("chdb://")

    def connect(self) -> None:
        """Connect without touching the schema (read-only tools)."""
        try:
            self._client = _connect(self.url, self._user, self._password)
        except Exception as exc:  # driver raises many kinds on connect
            raise StoreUnavailable(f"clickhouse: cannot connect to {self.url}: {exc}") from exc

    def setup(self) -> None:
        """Connect, create database and tables if absent, record the schema version."""
        self.connect()
        for stmt in clickhouse_ddl(self.database, self.layout.cluster):
            self.command(stmt)
        self._migrate_settings()
        found = self.query(f"SELECT max(version) FROM {self.database}.schema_migrations")
        current = int(found[0][0] or 0) if found else 0
        if current > SCHEMA_VERSION:
            raise SchemaMismatch(
                f"clickhouse schema version {current} is newer than this code ({SCHEMA_VERSION})"
            )
        if current < SCHEMA_VERSION:
            self.insert(
                "schema_migrations",
                [[SCHEMA_VERSION, datetime.now(UTC)]],
                ["version", "applied_at"],
            )

    def _migrate_settings(self) -> None:
        """v4 → v5: rebuild a ``memory_settings`` whose replacing key lacks the tenant
        (``memstream.schemas.storage.settings_rebuild``; on a cluster the local tables'
        columns tell, every host has the same)."""
        lay = self.layout
        cols = {
            r[0]
            for r in self.query(
                "SELECT name FROM system.columns WHERE database = {d:String} AND table = {t:String}",
                {"d": lay.db, "t": lay.local_name(SETTINGS_TABLE)},
            )
        }
        if "tenant_id" not in cols:
            for stmt in settings_rebuild(lay.db, lay.cluster):
                self.command(stmt)
        for stmt in settings_done(lay.db, lay.cluster):
            self.command(stmt)

    def schema_version(self) -> int:
        rows = self.query(f"SELECT max(version) FROM {self.database}.schema_migrations")
        return int(rows[0][0] or 0)

    def ping(self) -> bool:
        try:
            return self.query("SELECT 1")[0][0] == 1
        except Exception:
            return False

    def engine_stats(self) -> dict[str, int]:
        """The engine's own memory and threads (``system.metrics``: memory tracked, cache
        bytes, global pool threads) and, embedded, its jemalloc's totals, which are
        apart from the process's malloc; for a soak to tell chDB's growth from Python's."""
        rows = self.query(
            "SELECT metric, value FROM system.metrics WHERE metric IN {m:Array(String)} "
            "OR (metric LIKE '%Threads' AND value > 0)",  # the pools that hold threads
            {"m": list(_ENGINE_METRICS)},
        )
        stats = {str(name): int(value) for name, value in rows}
        if self.embedded:
            text = self.query("SELECT stats FROM system.jemalloc_stats")[0][0]
            # "Allocated: 9, active: 9, metadata: 9 (...), resident: 9, mapped: 9, ..."
            totals = re.search(r"^Allocated: .*$", text, re.MULTILINE)
            for name, value in re.findall(r"(\w+): (\d+)", totals.group(0) if totals else ""):
                stats[f"jemalloc_{name.lower()}"] = int(value)
        return stats

    def _require(self) -> Client:
        if self._client is None:
            raise StoreUnavailable("clickhouse: setup() was not called")
        return self._client

    def command(
        self, sql: str, parameters: Mapping[str, object] | None = None
    ) -> str | int | Sequence[str] | QuerySummary:
        client = self._require()
        with self._lock:
            return client.command(sql, parameters=_bound(parameters), settings=self._settings)

    def query(self, sql: str, parameters: Mapping[str, object] | None = None) -> list[tuple]:
        client = self._require()
        with self._lock:
            result = client.query(sql, parameters=_bound(parameters), settings=self._settings)
        return list(cast("list[tuple]", result.result_rows))  # rows are tuples (typed Sequence)

    def query_dicts(self, sql: str, parameters: Mapping[str, object] | None = None) -> list[dict]:
        client = self._require()
        with self._lock:
            result = client.query(sql, parameters=_bound(parameters), settings=self._settings)
        return [dict(zip(result.column_names, row, strict=True)) for row in result.result_rows]

    def query_readonly(
        self,
        sql: str,
        max_rows: int = 10_000,
        tenant: str | None = None,
        timeout_s: float = 10.0,
    ) -> tuple[list[str], list[tuple]]:
        """An analyst's query, made harmless twice over (three times for a tenant), and
        bounded: it runs on a client of its own (``sinks.sql_sessions``), never behind
        the store's lock, under ``core.sql_limits.limit_settings`` (``timeout_s``, threads,
        result and memory caps). A failure raises ``SqlFailed`` quoting no SQL; all
        clients busy for ``timeout_s`` raises ``SqlBusy``.

        The text is wrapped as a subquery, so anything but a single SELECT is a syntax
        error, and runs with a query-level ``SETTINGS readonly = 1``. (Client-level
        settings are not used: chDB keeps them for the whole session.) More than one
        statement is refused (``core.sql_guard.one_statement``). ``tenant``: the query
        is parsed, checked and rewritten so that it reads that tenant's rows of
        ``SQL_TABLES`` only (``core.sql_guard.tenant_sql``, which raises ``SqlRefused``),
        and every table that holds ``tenant_id`` shows that tenant's rows only besides
        (``additional_table_filters``; under ``readonly`` the query cannot change that).
        """
        settings = limit_settings(timeout_s, max_rows)
        if tenant is not None:
            check_tenant(tenant)  # the charset cannot break out of the quoted literal
            sql_tables = tuple(self.layout.tables(SQL_TABLES))  # local ones on a cluster
            body = tenant_sql(sql, tenant=tenant, database=self.database, tables=sql_tables)
            cond = f"tenant_id = \\'{tenant}\\'"
            tables = self.layout.tables(TENANT_TABLES)  # with the local ones on a cluster
            names = [n for t in tables for n in (f"{self.database}.{t}", t)]
            filters = ", ".join(f"'{n}': '{cond}'" for n in names)
            settings = f"additional_table_filters = {{{filters}}}, {settings}"
        else:
            body = one_statement(sql.strip())
        # the newline ends a trailing `-- comment` of the text before the parenthesis
        wrapped = f"SELECT * FROM ({body}\n) LIMIT {int(max_rows)} SETTINGS {settings}"
        try:
            result = self._sql_sessions(timeout_s).query(wrapped, self._settings, timeout_s)
        except StoreUnavailable:
            raise
        except Exception as exc:  # the driver's errors quote the query: told by code only
            message = safe_error(str(exc), timeout_s)
            raise SqlFailed(message, timed_out="time limit" in message) from None
        return list(result.column_names), [tuple(r) for r in result.result_rows]

    def _sql_sessions(self, timeout_s: float) -> SqlSessions:
        """The pool of analysts' clients, made on first use; embedded, more handles on
        the store's data path (``_connect`` already opened its engine)."""
        self._require()
        with self._lock:
            if self._sql is None:
                if self.embedded:
                    path = str(Path(urlparse(self.url).path).resolve())
                    kwargs: dict[str, Any] = {
                        "interface": "chdb",
                        "path": path,
                        "chdb_options": ENGINE_SERVER_SETTINGS,
                    }
                else:
                    kwargs = server_kwargs(self.url, self._user, self._password)
                    kwargs["send_receive_timeout"] = max(30, int(timeout_s) + 10)
                self._sql = SqlSessions(lambda: clickhouse_connect.get_client(**kwargs))
            return self._sql

    def insert(self, table: str, rows: Sequence[Sequence[object]], columns: Sequence[str]) -> None:
        """One round trip for the whole batch (columnar insert, never literal VALUES)."""
        if not rows:
            return
        client = self._require()
        with self._lock:
            client.insert(
                table,
                list(rows),
                column_names=list(columns),
                database=self.database,
                settings=self._settings,
            )

    def close(self) -> None:
        if self._sql is not None:
            self._sql.close()
            self._sql = None
        if self._client is not None and not self.embedded:
            self._client.close()
        self._client = None
