"""Admin endpoints for the `memstream` CLI, answered to loopback callers only, and once
API keys are configured only with an admin key (the CLI sends ``MEMSTREAM_API_KEY``).

``POST /admin/v1/lifecycle/run {"now"?: ISO 8601, "users"?: [id, ...]}`` runs one
lifecycle pass with that clock in the node that owns the stores (the CLI cannot open an
embedded store the node holds) and answers its summary. The pass itself is injected
by the process as ``app.state.lifecycle_runner`` (``(now, users) -> dict``): the API
tier does not import the dataflows.

``POST /admin/v1/sql {"query": "SELECT ...", "max_rows"?: n}`` runs a read-only query
(ClickHouse ``readonly=1``) on the store, for ``memstream sql`` in embedded mode.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from recall_api.deps import caller_of
from recall_api.errors import ApiError
from schemas.errors import ErrorCode
from schemas.events import UserId

router = APIRouter(prefix="/admin/v1", tags=["admin"])
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def _loopback(request: Request) -> None:
    host = request.client.host if request.client else ""
    if host not in LOOPBACK and not host.startswith("127."):
        raise ApiError(ErrorCode.UNAUTHENTICATED, "admin endpoints answer loopback callers only")


def _admin(request: Request, _: Annotated[None, Depends(_loopback)]) -> None:
    """Loopback callers only; once keys are configured, with an admin key too."""
    caller = caller_of(request)
    caller.require_admin("/admin")


LoopbackOnly = Annotated[None, Depends(_admin)]


class LifecycleRunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    now: datetime | None = None  # naive = UTC; default: the node's wall clock
    users: list[UserId] | None = Field(default=None, max_length=10_000)


@router.post("/lifecycle/run")
def lifecycle_run(body: LifecycleRunRequest, request: Request, _: LoopbackOnly) -> dict[str, Any]:
    """One lifecycle pass (archive, expiry, purge, reconcile) at ``now``; answers its summary."""
    runner = getattr(request.app.state, "lifecycle_runner", None)
    if runner is None:
        raise ApiError(ErrorCode.UNAVAILABLE, "this process runs no lifecycle passes")
    now = body.now or datetime.now(UTC)
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    return {"code": 0, "msg": "ok", "data": runner(now=now, users=body.users)}


class SqlRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=100_000)
    max_rows: int = Field(default=1000, ge=1, le=100_000)


@router.post("/sql")
def sql(body: SqlRequest, request: Request, _: LoopbackOnly) -> dict[str, Any]:
    """Read-only SQL on the ClickHouse store; any write is refused by ClickHouse itself."""
    try:
        columns, rows = request.app.state.stores.clickhouse.query_readonly(
            body.query, body.max_rows
        )
    except Exception as exc:  # the server's message is the useful answer (syntax, READONLY)
        raise ApiError(ErrorCode.BAD_PARAMETER, str(exc).splitlines()[0][:1000]) from None
    return {"code": 0, "msg": "ok", "data": {"columns": columns, "rows": rows}}
