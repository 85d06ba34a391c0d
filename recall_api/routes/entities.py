"""The entity view (docs/api.md#entities): ``entities`` lists a user's entities,
``entity`` shows one with its summary and every memory that names it, history included.

Both read the user's memories the key may read (``recall_api.access``: an app key its
apps' and the GLOBAL ones, never another app's or tenant's), narrowed to the request's
scope, and leave the rest to the pure rules of ``core.entity_view``. Read on request,
from the stored memories: a memory deleted or purged is out of every view the moment its
delete returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from fastapi import APIRouter, Response

from core.entity_view import EntityView, aggregate, in_scope, matching, of_type, timeline
from core.profile import plan_profile
from memstream.schemas.api import Envelope
from memstream.schemas.enums import Status
from memstream.schemas.errors import ErrorCode
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.requests import EntitiesRequest, EntityRequest, ViewScope
from memstream.schemas.responses import Entities, Entity, EntityDetail, Memory, SummaryItem
from models.rules.entity_mention import normalize_type
from recall_api.access import Caller
from recall_api.deps import CallerDep, ServicesDep
from recall_api.errors import ApiError, ok
from sinks.services import Services

router = APIRouter(prefix="/memory/v1", tags=["entities"])


def _records(
    svc: Services, caller: Caller, user_id: int, scope: ViewScope | None
) -> list[MemoryRecord]:
    """The user's memories this key may read, narrowed to ``scope`` (none: all of them);
    a scope naming an app that is not the key's answers 40101."""
    if scope is not None:
        caller.check_app(scope.app_id)
    rows = caller.visible(svc.memories.load(user_id, tenant=caller.tenant))
    if scope is None:
        return rows
    return [
        r for r in rows if in_scope(r, include_global=scope.include_global, app_id=scope.app_id)
    ]


def _entity(v: EntityView) -> Entity:
    return Entity(
        entity_id=v.entity_id,
        name=v.name,
        type=v.type,
        aliases=list(v.aliases),
        memories=v.memories,
        last_seen=v.last_seen,
    )


def _summary(records: Sequence[MemoryRecord], max_chars: int) -> list[SummaryItem]:
    """The entity's ACTIVE memories compressed as the profile compresses the user's
    (``core.profile``): each item cites exactly what it states."""
    items = plan_profile(records, max_chars, now=datetime.now(UTC))
    return [
        SummaryItem(text=i.text, memory_ids=list(i.memory_ids), msg_ids=list(i.msg_ids))
        for i in items
    ]


@router.post("/entities", response_model=Envelope[Entities])
def entities(body: EntitiesRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """One page of the user's entities, most memories first."""
    views = aggregate(_records(svc, caller, body.user_id, body.scope))
    if body.type is not None:
        views = of_type(views, normalize_type(body.type))  # "Places", "location": place
    start = (body.page - 1) * body.page_size
    return ok(
        Entities(
            entities=[_entity(v) for v in views[start : start + body.page_size]],
            total=len(views),
            page=body.page,
            page_size=body.page_size,
            has_more=start + body.page_size < len(views),
        )
    )


@router.post("/entity", response_model=Envelope[EntityDetail])
def entity(body: EntityRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """The entity named by ``entity_id`` or ``name`` (or an alias), its summary and its
    memories in time order; a name that two entities share answers both (``entities``)."""
    rows = _records(svc, caller, body.user_id, body.scope)
    views = aggregate(rows)
    found = matching(views, entity_id=body.entity_id, name=body.name)
    if not found:
        what = f"id '{body.entity_id}'" if body.entity_id is not None else f"name '{body.name}'"
        raise ApiError(ErrorCode.NOT_FOUND, f"no entity with {what} in this scope")
    first = found[0]
    memories = timeline(rows, first.entity_id)
    # ``entities`` set only when the name matched several: an unset field stays out
    several = {"entities": [_entity(v) for v in found]} if len(found) > 1 else {}
    return ok(
        EntityDetail(
            entity=_entity(first),
            summary=_summary([r for r in memories if r.status is Status.ACTIVE], body.max_chars),
            memories=[Memory.of(r) for r in memories],
            **several,
        )
    )
