"""``POST /memory/v1/recall`` — the request of the design document's chapter 5, plus
``scope.session_id``, ``as_of``, ``max_chars`` (the agent's context budget: of the top
``top_k``, the best-ranked memories that fit whole, in rank order, with ``chars_used``
in the answer) and ``record_hit`` (false: the recall is not counted as a hit, for
inspection). The orchestration lives in ``recall_api.recall``.

Codes: 0 (``hit`` false when nothing passed the threshold), 40001 bad parameter,
40301 the user's memory is switched off (data ``{hit: false, memories: []}``; an app
switched off only drops that app's memories), 40302 cross-app asked, 50401 timeout or
store failure (circuit breaker), also with empty data.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
)

from core.ranking import Ranked, within_budget
from core.scope import ScopeRequest
from recall_api.deps import CallerDep, ServicesDep
from recall_api.errors import ApiError, envelope
from recall_api.recall import RecallParams, recaller_for
from schemas.enums import MemType, Ownership
from schemas.errors import ErrorCode
from schemas.events import UserId
from schemas.limits import ScopeId, strict_store_time
from schemas.memory import MemoryRecord
from schemas.tenants import DEFAULT_TENANT

router = APIRouter(prefix="/memory/v1", tags=["recall"])

MAX_TOP_K = 100
MAX_CHARS = 1_000_000


def _aware(v: datetime) -> datetime:
    if v.tzinfo is None or v.utcoffset() is None:
        raise ValueError("as_of needs a timezone, e.g. 2025-01-31T12:00:00Z")
    return v


# as_of: with a timezone, then UTC inside the stores' range (schemas.limits.StoreTime)
AsOf = Annotated[datetime, AfterValidator(_aware), AfterValidator(strict_store_time)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CrossApp(_Strict):
    enabled: StrictBool = False


class RecallScope(_Strict):
    include_global: StrictBool = True
    app_id: ScopeId | None = None
    session_id: ScopeId | None = None
    cross_app: CrossApp = Field(default_factory=CrossApp)


class RecallFilter(_Strict):
    ownership: list[Ownership] = Field(default_factory=list)
    mem_type: list[MemType] = Field(default_factory=list)
    custom_tags: list[Annotated[str, StringConstraints(min_length=1, max_length=256)]] = Field(
        default_factory=list, max_length=32
    )


class RecallRequest(_Strict):
    user_id: UserId
    query: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4096)]
    scope: RecallScope = Field(default_factory=RecallScope)
    filter: RecallFilter = Field(default_factory=RecallFilter)
    top_k: int | None = Field(default=None, ge=1, le=MAX_TOP_K)
    min_relevance: float | None = Field(default=None, ge=0, le=1)
    include_archived: StrictBool = False
    timeout_ms: int | None = Field(default=None, ge=1, le=60_000)
    as_of: AsOf | None = None
    # the agent's context budget: the best-ranked memories that fit whole, in rank order
    max_chars: StrictInt | None = Field(default=None, ge=1, le=MAX_CHARS)
    # false: an inspection (the console's playground), not a use: no recall-hit event,
    # so no weight recovery and no last_recalled_at change; the ranking is the same
    record_hit: StrictBool = True

    def params(
        self, default_top_k: int, default_timeout_ms: int, tenant: str = DEFAULT_TENANT
    ) -> RecallParams:
        scope = ScopeRequest(
            user_id=self.user_id,
            tenant_id=tenant,
            include_global=self.scope.include_global,
            app_id=self.scope.app_id,
            session_id=self.scope.session_id,
            cross_app=self.scope.cross_app.enabled,
            ownership=frozenset(self.filter.ownership),
            mem_type=frozenset(self.filter.mem_type),
            custom_tags=tuple(self.filter.custom_tags),
            include_archived=self.include_archived,
            as_of=self.as_of,
        )
        return RecallParams(
            scope=scope,
            query=self.query,
            top_k=self.top_k or min(default_top_k, MAX_TOP_K),
            min_relevance=self.min_relevance,
            timeout_ms=self.timeout_ms or default_timeout_ms,
        )


@router.post("/recall")
async def recall(
    body: RecallRequest,
    svc: ServicesDep,
    caller: CallerDep,
    request: Request,
) -> JSONResponse:
    """The memories relevant to ``query`` that the scope allows, best first."""
    caller.check_app(body.scope.app_id)
    if caller.is_app and body.scope.session_id and not body.scope.app_id:
        raise ApiError(
            ErrorCode.UNAUTHENTICATED, "an app key must name its app_id with a session_id"
        )
    recaller = recaller_for(request.app.state, svc)
    s = svc.settings
    hits = await recaller.recall(body.params(s.default_top_k, s.recall_timeout_ms, caller.tenant))
    items = [item(record, ranked) for record, ranked in hits]
    data: dict[str, Any] = {"hit": bool(items), "memories": items}
    if body.max_chars is not None:
        kept, used = within_budget([i["content"] for i in items], body.max_chars)
        data["memories"] = [items[k] for k in kept]
        data.update(hit=bool(kept), max_chars=body.max_chars, chars_used=used)
    if body.record_hit:  # off this thread; only what the caller receives is a use
        memory_ids = [i["memory_id"] for i in data["memories"]]
        recaller.hits.submit(body.user_id, memory_ids, caller.tenant)
    return envelope(ErrorCode.OK, "ok", data)


def item(r: MemoryRecord, ranked: Ranked) -> dict[str, Any]:
    """One recalled memory as the caller sees it (weight decayed to now)."""
    return {
        "memory_id": r.memory_id, "content": r.content, "ownership": str(r.ownership),
        "mem_type": str(r.mem_type), "level": str(r.level), "app_id": r.app_id,
        "session_id": r.session_id, "status": str(r.status),
        "weight": round(ranked.weight, 6), "relevance": round(ranked.relevance, 6),
        "score": round(ranked.score, 6), "is_important": r.is_important,
        "created_at": _iso(r.created_at), "valid_at": _iso(r.valid_at),
        "invalid_at": _iso(r.invalid_at), "custom_tags": r.custom_tags,
        "source": r.source(),
    }  # fmt: skip


def _iso(dt: datetime | None) -> str | None:
    return None if dt is None else dt.astimezone(UTC).isoformat().replace("+00:00", "Z")
