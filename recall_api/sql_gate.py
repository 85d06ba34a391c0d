"""One running ``/admin/v1/sql`` query per tenant (docs/security.md#tenants).

A second query of a tenant while its first runs answers 42910 at once rather than
queueing behind it: a tenant cannot stack its queries on the node's few SQL sessions
(``sinks.sql_sessions``) and crowd other tenants out. Local mode (no keys) counts as
one tenant, ``None``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class TenantBusy(RuntimeError):
    """The tenant already runs a query."""


class TenantGate:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[str | None] = set()

    @contextmanager
    def hold(self, tenant: str | None) -> Iterator[None]:
        """Held while ``tenant``'s query runs; ``TenantBusy`` if one already does."""
        with self._lock:
            if tenant in self._running:
                raise TenantBusy(tenant)
            self._running.add(tenant)
        try:
            yield
        finally:
            with self._lock:
                self._running.discard(tenant)
