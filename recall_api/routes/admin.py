"""Admin endpoints for the `memstream` CLI, answered to loopback callers only, and once
API keys are configured only with an admin key (the CLI sends ``MEMSTREAM_API_KEY``).

``POST /admin/v1/lifecycle/run {"now"?: ISO 8601, "users"?: [id, ...]}`` runs one
lifecycle pass with that clock in the node that owns the stores (the CLI cannot open an
embedded store the node holds) and answers its summary. The pass itself is injected
by the process (``create_app(..., lifecycle_runner=)``, a ``recall_api.state.LifecycleRunner``):
the API tier does not import the dataflows.

``GET /admin/v1/stats`` answers what the process holds: its Python heap, glibc malloc's
totals, the hot cache's footprint and the ClickHouse engine's memory and threads
(``recall_api.process_stats``), for ``memstream bench soak``. They are the process's,
not a tenant's, so any admin key may read them.

``POST /admin/v1/sql {"query": "SELECT ...", "max_rows"?: n}`` runs a read-only query
(ClickHouse ``readonly=1``) on the store, for ``memstream sql`` in embedded mode; one
statement only. It runs on SQL sessions of its own, never behind the writer's calls,
within ``sql_timeout_s`` and the caps of ``core.sql_limits``; one query per tenant at a
time (a second answers 42910, ``recall_api.sql_gate``); a failure answers 40001 with
ClickHouse's reason and code, never the SQL (ClickHouse's messages quote it).

An admin key is the admin of its tenant only: its lifecycle pass covers that tenant's
users, and its SQL may read that tenant's rows of ``memories``, ``memory_changelog`` and
``memory_settings`` only: one SELECT (UNION, CTEs, joins and subqueries are fine),
parsed by ``core.sql_guard``, which refuses table functions, other tables (``system.*``,
``data_keys``, ...), ``IN <table>``, ``dictGet``-style functions, ``SETTINGS`` and
``FORMAT`` (40001, naming what it refused) and rewrites each table into a subquery of
the tenant's rows; the server runs that rewrite, with ``additional_table_filters`` on
every table that holds ``tenant_id`` besides. With no keys configured (local mode) both
cover every tenant.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from core.sql_guard import SqlRefused
from memstream.schemas.api import Envelope
from memstream.schemas.errors import ErrorCode
from memstream.schemas.requests import LifecycleRunRequest, SqlRequest
from memstream.schemas.responses import LifecycleSummary, ProcessStats, SqlResult
from recall_api.access import Caller
from recall_api.deps import ApiDep, caller_of
from recall_api.errors import ApiError, ok
from recall_api.process_stats import process_stats
from recall_api.sql_gate import TenantBusy
from sinks.clickhouse import SqlFailed
from sinks.sql_sessions import SqlBusy

router = APIRouter(prefix="/admin/v1", tags=["admin"])
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def _loopback(request: Request) -> None:
    host = request.client.host if request.client else ""
    if host not in LOOPBACK and not host.startswith("127."):
        raise ApiError(ErrorCode.UNAUTHENTICATED, "admin endpoints answer loopback callers only")


def _admin(request: Request, _: Annotated[None, Depends(_loopback)]) -> Caller:
    """Loopback callers only; once keys are configured, with an admin key too."""
    caller = caller_of(request)
    caller.require_admin("/admin")
    return caller


LoopbackOnly = Annotated[Caller, Depends(_admin)]


@router.post("/lifecycle/run", response_model=Envelope[LifecycleSummary])
def lifecycle_run(body: LifecycleRunRequest, api: ApiDep, caller: LoopbackOnly) -> Response:
    """One lifecycle pass (archive, expiry, purge, reconcile) at ``now``; answers its summary."""
    runner = api.lifecycle_runner
    if runner is None:
        raise ApiError(ErrorCode.UNAVAILABLE, "this process runs no lifecycle passes")
    now = body.now or datetime.now(UTC)
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    if caller.role is None:  # local mode: every tenant
        summary = runner(now=now, users=body.users)
    else:  # a key: its tenant
        summary = runner(now=now, users=body.users, tenant=caller.tenant)
    return ok(LifecycleSummary.model_validate(summary))


@router.get("/stats", response_model=Envelope[ProcessStats])
def stats(api: ApiDep, _: LoopbackOnly) -> Response:
    """The process's heap, hot cache and ClickHouse engine figures (a soak's sampler)."""
    data = process_stats(api.stores, api.services)
    return ok(ProcessStats.model_validate(data))


@router.post("/sql", response_model=Envelope[SqlResult])
def sql(body: SqlRequest, api: ApiDep, caller: LoopbackOnly) -> Response:
    """Read-only SQL on the ClickHouse store; any write is refused by ClickHouse itself."""
    store = api.stores.clickhouse
    tenant = None if caller.role is None else caller.tenant
    timeout_s = api.settings.sql_timeout_s
    wait = math.ceil(timeout_s)  # a running query ends within its time limit
    try:
        with api.sql_gate.hold(tenant):
            columns, rows = store.query_readonly(
                body.query, body.max_rows, tenant=tenant, timeout_s=timeout_s
            )
    except TenantBusy:
        who = "this node" if tenant is None else f"tenant {tenant}"
        msg = f"{who} already runs a SQL query: one at a time, send this one when it ends"
        raise ApiError(ErrorCode.RATE_LIMITED, msg, retry_after=wait) from None
    except SqlBusy as exc:  # every SQL session runs another tenant's query
        msg = f"the node's SQL sessions are busy: {exc}"
        raise ApiError(ErrorCode.RATE_LIMITED, msg, retry_after=wait) from None
    except SqlRefused as exc:  # what a tenant may not read, or a second statement
        raise ApiError(ErrorCode.BAD_PARAMETER, f"query refused: {exc}") from None
    except SqlFailed as exc:  # ClickHouse's reason, by code: its message quotes the SQL
        raise ApiError(ErrorCode.BAD_PARAMETER, f"query failed: {exc}") from None
    return ok(SqlResult(columns=columns, rows=[list(r) for r in rows]))
