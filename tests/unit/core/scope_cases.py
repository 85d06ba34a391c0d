"""Shared by the scope tests: a cached-memory record, hypothesis strategies, and an
independent brute-force definition of who may see what (written from docs/api.md#recall and
docs/security.md#api-keys, not from core.scope)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from core.scope import ScopeRequest, Switches
from memstream.schemas.enums import Level, MemType, Ownership, Status

T0 = datetime(2025, 1, 1, tzinfo=UTC)
APPS = [None, "a", "b", 'q"x']
SESSIONS = [None, "s1", "s2"]
TAG_FILTERS = ["k", "k:v", "k:w", "persona:true", "persona:false", "x", "k:"]


@dataclass
class Rec:
    user_id: int
    app_id: str | None
    session_id: str | None
    level: Level
    ownership: Ownership
    mem_type: MemType
    status: Status
    valid_at: datetime
    invalid_at: datetime | None
    custom_tags: dict[str, Any] = field(default_factory=dict)
    memory_id: str = ""
    tenant_id: str = "default"


def at(day: int) -> datetime:
    return T0 + timedelta(days=day)


tag_values = st.sampled_from(["v", "w", "", True, False, 3])
day_or_none = st.sampled_from([*[None] * 12, *range(1, 13)]).map(
    lambda d: None if d is None else at(d)
)


def records_near(req: ScopeRequest) -> st.SearchStrategy[Rec]:
    """Records drawn mostly inside the slices ``req`` asks for, so that many of them match."""
    slots = st.sampled_from(
        [
            (Level.GLOBAL, None, None),
            (Level.APP, req.app_id, None),
            (Level.SESSION, req.app_id, req.session_id),
        ]
    ) | st.tuples(st.sampled_from(list(Level)), st.sampled_from(APPS), st.sampled_from(SESSIONS))
    edge = [] if req.as_of is None else [req.as_of]  # boundaries of valid_at ≤ as_of < invalid_at
    return st.builds(
        _rec,
        slots,
        user_id=st.sampled_from([*[req.user_id] * 5, req.user_id + 1]),
        tenant_id=st.sampled_from([*[req.tenant_id] * 5, "default", "t2"]),  # same id, 2 people
        ownership=st.sampled_from(list(Ownership)),
        mem_type=st.sampled_from(list(MemType)),
        status=st.sampled_from([Status.ACTIVE, Status.ACTIVE, *Status]),
        valid_at=st.sampled_from([at(0), at(0), at(3), at(6), at(10), *edge]),
        invalid_at=day_or_none | st.sampled_from(edge or [None]),
        custom_tags=st.dictionaries(st.sampled_from(["k", "persona", "x"]), tag_values, max_size=3),
    )


def _rec(slot: tuple[Level, str | None, str | None], **kw: Any) -> Rec:
    level, app_id, session_id = slot
    return Rec(level=level, app_id=app_id, session_id=session_id, **kw)


requests = st.builds(
    ScopeRequest,
    user_id=st.sampled_from([1, 2]),
    tenant_id=st.sampled_from(["default", "default", "t2"]),
    include_global=st.sampled_from([True, True, False]),
    app_id=st.sampled_from(APPS),
    session_id=st.sampled_from(SESSIONS),
    ownership=st.sampled_from(
        [frozenset(), frozenset(), *map(frozenset, [[o] for o in Ownership])]
    ),
    mem_type=st.sampled_from(
        [frozenset(), frozenset(), frozenset(MemType), frozenset([MemType.SEMANTIC])]
    ),
    custom_tags=st.just(())
    | st.just(())
    | st.lists(st.sampled_from(TAG_FILTERS), max_size=2).map(tuple),
    include_archived=st.booleans(),
    as_of=st.one_of(st.none(), st.integers(0, 12).map(at)),
)
switches = st.just(Switches()) | st.builds(
    Switches, disabled_apps=st.frozensets(st.sampled_from(["a", "b", 'q"x']), max_size=2)
)


def tag_ok(tags: dict[str, Any], f: str) -> bool:
    if ":" not in f:
        return f in tags
    key, want = f.split(":", 1)
    if key not in tags:
        return False
    have = tags[key]
    if have is True:
        return want == "true"
    if have is False:
        return want == "false"
    return type(have) is str and have == want


def visible(rec: Rec, req: ScopeRequest, sw: Switches) -> bool:
    """Brute-force reference: may this request see this memory?"""
    if rec.user_id != req.user_id or rec.tenant_id != req.tenant_id or rec.status == Status.DELETED:
        return False
    req_app = req.app_id or None
    app_off = req_app is not None and req_app in sw.disabled_apps
    if rec.level == Level.GLOBAL:
        in_scope = req.include_global
    elif rec.level == Level.APP:
        in_scope = req_app is not None and not app_off and rec.app_id == req_app
    else:
        in_scope = (
            req.session_id is not None
            and not app_off
            and rec.session_id == req.session_id
            and (rec.app_id or None) == req_app
        )
    if not in_scope:
        return False
    if rec.status == Status.ARCHIVED and not req.include_archived:
        return False
    if req.as_of is None:
        if rec.status == Status.SUPERSEDED or rec.invalid_at is not None:
            return False
    elif not (rec.valid_at <= req.as_of and (rec.invalid_at is None or req.as_of < rec.invalid_at)):
        return False
    if req.ownership and rec.ownership not in req.ownership:
        return False
    if req.mem_type and rec.mem_type not in req.mem_type:
        return False
    if rec.mem_type == MemType.ITEM:  # a key-value item is read by key, never recalled
        return False
    return all(tag_ok(rec.custom_tags, f) for f in req.custom_tags)
