"""``POST /memory/v1/profile`` (docs/api.md#profile): who the user is and what matters
now, as items that fit the caller's budget whole, each citing exactly the memories and
turns it states (docs/architecture.md#the-profile).

Read from the scope's stored profile (a derived memory the writer keeps current in the
batch of every change, ``core.derived``), cut to the caller's budget: a memory deleted,
superseded or purged is out of it when the call that changed it returns. A profile
narrowed to an ``entity``, one of a scope without GLOBAL, one over the stored budget and
one not stored yet are planned on read from the user's current memories. The records
are the ACTIVE ones the key may read (``recall_api.access``) in the request's scope by
recall's own predicate (``core.scope``: the GLOBAL memories with ``include_global``,
the app's APP memories with ``app_id``; a switched-off app contributes nothing, a
switched-off user answers 40301 with an empty profile). An app key names one of its
apps or none (GLOBAL only) and never sees another app's facts. ``entity`` narrows the
records to those that name it (an entity_id, or a name or alias as the entity view
matches it). The choice and the words are the pure planner's (``core.profile``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from fastapi import APIRouter, Response

from core.derived import STORED_CHARS, cut, profile_id, stored_items
from core.entity_view import aggregate, matching
from core.profile import ProfileItem as PlannedItem
from core.profile import plan_profile
from core.scope import ScopeError, ScopeRequest, resolve_scope
from core.user_index import UserIndex
from memstream.schemas.api import Envelope
from memstream.schemas.enums import DERIVED_TYPES, Level, Status
from memstream.schemas.errors import ErrorCode
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.requests import ProfileRequest, ViewScope
from memstream.schemas.responses import Profile, ProfileItem
from models.rules.entity_mention import entity_key as _fold
from recall_api.access import Caller
from recall_api.deps import CallerDep, ServicesDep
from recall_api.errors import ApiError, ok
from sinks.services import Services

log = logging.getLogger(__name__)
router = APIRouter(prefix="/memory/v1", tags=["profile"])
EMPTY: dict[str, object] = {"items": [], "chars_used": 0, "updated_at": None}


def scope_records(
    svc: Services,
    caller: Caller,
    user_id: int,
    scope: ViewScope,
    empty: object = EMPTY,
    held: Callable[[], list[MemoryRecord] | None] | None = None,
) -> list[MemoryRecord]:
    """The ACTIVE memories of ``scope`` this key may read (also the context call's,
    ``recall_api.routes.context``); a switched-off user: 40301 with ``empty`` as data.
    ``held``: the user's ACTIVE memories as a cache holds them (the context call's hot
    index), or None to read the store."""
    caller.check_app(scope.app_id)
    request = ScopeRequest(
        user_id=user_id,
        tenant_id=caller.tenant,
        include_global=scope.include_global,
        app_id=scope.app_id,
    )
    try:
        pred = resolve_scope(request, svc.switches.get(user_id, tenant=caller.tenant))
    except ScopeError as exc:
        raise ApiError(ErrorCode(exc.code), str(exc), empty) from None
    if pred.is_empty:
        return []
    rows = held() if held is not None else None
    if rows is None:
        rows = svc.memories.load(user_id, statuses=[Status.ACTIVE], tenant=caller.tenant)
    return [r for r in caller.visible(rows) if r.status is Status.ACTIVE and pred.matches(r)]


def _about(
    records: Sequence[MemoryRecord], entity: str
) -> tuple[list[MemoryRecord], dict[str, str]]:
    """The records that name ``entity`` (its id, or a name or alias of it), and the
    matched entities' names by id."""
    views = aggregate(records, fold=_fold)
    found = matching(views, entity_id=entity, fold=_fold) + matching(views, name=entity, fold=_fold)
    names = {v.entity_id: v.name for v in found}
    return [r for r in records if any(e["entity_id"] in names for e in r.entities)], names


def _named(item: PlannedItem, by_id: dict[str, MemoryRecord], names: dict[str, str]) -> str | None:
    """The item's entity: in a profile narrowed to an entity (``names``), that entity,
    which every item names; else the one the planner found the item to be about."""
    for mid in item.memory_ids if names else ():
        for link in by_id[mid].entities:
            if link["entity_id"] in names:
                return names[link["entity_id"]]
    return item.entity


def held_profiles(
    svc: Services, user_id: int, tenant: str, wait: bool = True
) -> dict[str, MemoryRecord] | None:
    """The user's stored profiles by id: those the hot cache follows when it holds the
    user (``UserIndex.derived``, kept by every write it mirrors), else read from the
    store, and then followed when no version was written while they were read. A held
    user loaded from a snapshot (which holds no profile) has none followed yet: with
    ``wait`` false, None at once and they are read on the fill thread for the next call
    (the context call plans instead: a store read on its path was its p99)."""

    def load() -> dict[str, MemoryRecord]:
        rows = svc.memories.load(user_id, mem_types=DERIVED_TYPES, tenant=tenant)
        return {r.memory_id: r for r in rows}

    idx = svc.cache.peek(user_id, tenant=tenant)
    if idx is None:
        return load() if wait else None
    with idx.lock:
        if idx.derived is not None:
            return dict(idx.derived)
    if not wait:
        _fill_later(idx, load)
        return None
    return _follow(idx, load)


def _follow(idx: UserIndex, load: Callable[[], dict[str, MemoryRecord]]) -> dict[str, MemoryRecord]:
    while True:  # again when a version was written while the store was read
        with idx.lock:
            if idx.derived is not None:
                return dict(idx.derived)
            seen = idx.derived_seen
        loaded = load()
        with idx.lock:
            if idx.derived is None and idx.derived_seen == seen:
                idx.derived = loaded
            if idx.derived is not None:
                return dict(idx.derived)


_FILLS = ThreadPoolExecutor(1, thread_name_prefix="profile-fill")
_FILLING: set[int] = set()  # id() of the indexes queued
_FILLING_LOCK = threading.Lock()


def _fill_later(idx: UserIndex, load: Callable[[], dict[str, MemoryRecord]]) -> None:
    """``_follow`` on the fill thread, once per index at a time; a failure is logged."""
    with _FILLING_LOCK:
        if id(idx) in _FILLING:
            return
        _FILLING.add(id(idx))

    def run() -> None:
        try:
            _follow(idx, load)
        except Exception:
            log.warning("stored profiles not read; the next call tries again", exc_info=True)
        finally:
            with _FILLING_LOCK:
                _FILLING.discard(id(idx))

    _FILLS.submit(run)


def stored_profile(
    svc: Services,
    caller: Caller,
    user_id: int,
    scope: ViewScope,
    max_chars: int,
    empty: object = EMPTY,
    wait: bool = True,
) -> Profile | None:
    """The scope's stored profile (``core.derived``) cut to ``max_chars``, or None when it
    must be planned on read: a scope without GLOBAL (no profile stands for it), a budget
    over the stored plan's, a user whose profile is not written yet (memories stored
    before profiles were). The scope's rules are recall's (``scope_records``)."""
    caller.check_app(scope.app_id)
    if not scope.include_global or max_chars > STORED_CHARS:
        return None
    request = ScopeRequest(
        user_id=user_id, tenant_id=caller.tenant, include_global=True, app_id=scope.app_id
    )
    try:
        pred = resolve_scope(request, svc.switches.get(user_id, tenant=caller.tenant))
    except ScopeError as exc:
        raise ApiError(ErrorCode(exc.code), str(exc), empty) from None
    app = next((b.app_id for b in pred.branches if b.level is Level.APP), None)
    held = held_profiles(svc, user_id, caller.tenant, wait)
    if held is None:
        return None
    rec = held.get(profile_id(caller.tenant, user_id, app))
    if app is not None and rec is not None and rec.status is not Status.ACTIVE:
        # an app left without memories of its own: the GLOBAL profile stands for it
        rec = held.get(profile_id(caller.tenant, user_id, None))
    if rec is None or not caller.can_read(rec):
        return None
    if rec.status is not Status.ACTIVE:
        return Profile(items=[], chars_used=0, updated_at=None)
    items = cut(stored_items(rec), max_chars, datetime.now(UTC))
    return Profile(
        items=[
            ProfileItem(
                text=i.text, entity=i.entity, memory_ids=list(i.memory_ids), msg_ids=list(i.msg_ids)
            )
            for i in items
        ],
        chars_used=sum(len(i.text) for i in items),
        updated_at=rec.updated_at if items else None,
    )


@router.post("/profile", response_model=Envelope[Profile])
def profile(body: ProfileRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """The user's profile in ``scope`` within ``max_chars`` (module docstring)."""
    if body.entity is None:
        stored = stored_profile(svc, caller, body.user_id, body.scope, body.max_chars)
        if stored is not None:
            return ok(stored)
    records = scope_records(svc, caller, body.user_id, body.scope)
    names: dict[str, str] = {}
    if body.entity is not None:
        records, names = _about(records, body.entity)
    items = plan_profile(records, body.max_chars, now=datetime.now(UTC))
    by_id = {r.memory_id: r for r in records}
    cited = [by_id[m] for i in items for m in i.memory_ids]
    return ok(
        Profile(
            items=[
                ProfileItem(
                    text=i.text,
                    entity=_named(i, by_id, names),
                    memory_ids=list(i.memory_ids),
                    msg_ids=list(i.msg_ids),
                )
                for i in items
            ],
            chars_used=sum(len(i.text) for i in items),
            updated_at=max((r.updated_at for r in cited), default=None),
        )
    )
