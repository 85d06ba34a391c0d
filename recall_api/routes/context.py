"""``POST /memory/v1/context`` (docs/api.md#context): one call for an agent's turn, the
profile, the memories relevant to the turn and the entities it names, as items with
their sources and one rendered ``text`` that fits ``max_chars``
(docs/architecture.md#the-context-call).

Three reads, each by its own endpoint's rules, so the context says nothing they would
not: the stored profile (``routes.profile.stored_profile``, cut to the budget; planned
from the records when there is none), the profile's records (``routes.profile.scope_records``: the ACTIVE memories of the
scope the key may read, taken from the hot cache when it holds the user, which recall
also searches and every write and delete keeps current, else from the store; so a
deleted memory is out the moment its delete returns), recall (``routes.recall.recall_params`` and the recaller, the query
being ``query`` or else the last user turns, trimmed) and the entities, resolved among
the profile's records as ingest resolves them (``core.entity_resolution``). The records
load after recall (which loads the user into the hot cache). Neither ``messages`` nor ``query``: no recall, the profile and
the entities of nothing (so only the profile). What to keep and how to say it is
``core.context``'s.

Codes: 0; 40001 bad parameter; 40101 an app that is not the key's; 40301 the user's
memory switched off; 50401 recall timed out (never a context without its memories):
each with ``{items: [], text: "", chars_used: 0}``. The memories recall found that the
context shows (as a memory, or cited by a profile or entity line) count as recall hits,
as recall's do, unless ``count_hit`` is false.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial

from fastapi import APIRouter, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from core import record_codec
from core.context import Context as Planned
from core.context import ContextItem as Line
from core.context import EntityNote, assemble, turn_query
from core.entity_resolution import EntityRegistry
from core.entity_view import aggregate
from core.profile import ProfileItem, plan_profile
from memstream.schemas.api import Envelope
from memstream.schemas.errors import ErrorCode
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.requests import ContextRequest, RecallRequest, RecallScope
from memstream.schemas.responses import Context, ContextItem
from models.rules.entities import extract_entities
from recall_api.access import Caller
from recall_api.deps import CallerDep, RecallerDep, ServicesDep
from recall_api.errors import ApiError, ok
from recall_api.recall import Recaller
from recall_api.routes.profile import scope_records, stored_profile
from recall_api.routes.recall import recall_params
from sinks.services import Services

router = APIRouter(prefix="/memory/v1", tags=["context"])
EMPTY: dict[str, object] = {"items": [], "text": "", "chars_used": 0}


async def _recall(
    svc: Services, recaller: Recaller, caller: Caller, body: ContextRequest, query: str
) -> list[MemoryRecord]:
    """The memories recall answers for ``query`` in the context's scope, best first."""
    try:
        ask = RecallRequest(
            user_id=body.user_id,
            query=query,
            scope=RecallScope(include_global=body.scope.include_global, app_id=body.scope.app_id),
        )
    except ValidationError as exc:  # (the turns were checked already: not expected)
        raise ApiError(ErrorCode.BAD_PARAMETER, f"query: {exc.errors()[0]['msg']}", EMPTY) from None
    s = svc.settings
    try:
        hits = await recaller.recall(
            recall_params(ask, s.default_top_k, s.recall_timeout_ms, caller.tenant)
        )
    except ApiError as exc:  # the context's own empty answer, not recall's
        raise ApiError(exc.code, exc.msg, EMPTY, exc.retry_after) from None
    return [r for r, _ in hits if caller.can_read(r)]


def _notes(
    records: Sequence[MemoryRecord],
    recalled: Sequence[MemoryRecord],
    query: str | None,
    caller: Caller,
    body: ContextRequest,
) -> list[EntityNote]:
    """The entities the query names (resolved as ingest resolves a memory of the scope's
    app), then those the recalled memories link, each with its records in scope."""
    views = {v.entity_id: v for v in aggregate(records)}
    if not views:
        return []
    order: list[str] = []
    if query:
        registry = EntityRegistry(caller.tenant, body.user_id)
        registry.learn(records)
        found = extract_entities(query, known=registry.known_keys()).mentions
        # a memory of the scope's app, or a GLOBAL one ("")
        order += [link["entity_id"] for link in registry.resolve(found, body.scope.app_id or "")]
    order += [e["entity_id"] for r in recalled for e in r.entities]
    notes = []
    for eid in dict.fromkeys(e for e in order if e in views):
        mine = [r for r in records if any(e["entity_id"] == eid for e in r.entities)]
        notes.append(EntityNote(eid, views[eid].name, views[eid].type, mine))
    return notes


def _held(svc: Services, user_id: int, tenant: str) -> list[MemoryRecord] | None:
    """The user's ACTIVE memories as the hot cache holds them (what recall searches, kept
    current by every write and delete), or None when the user is not held: decoding a
    held user (~7 us a memory) costs a tenth of reading the store."""
    idx = svc.cache.peek(user_id, tenant=tenant)
    if idx is None:
        return None
    with idx.lock:  # the bytes under the lock, decoded after it (as recall does)
        blobs = [idx.blob(m) for m in list(idx.columns.ids)]
    return [record_codec.decode(b) for b in blobs if b is not None]


def _profile(
    svc: Services, caller: Caller, body: ContextRequest, now: datetime
) -> tuple[list[MemoryRecord], list[ProfileItem]]:
    """The scope's records (the profile route's rules, from the hot cache when it holds
    the user) and their profile: the stored one cut to the whole budget, else planned."""
    held = partial(_held, svc, body.user_id, caller.tenant)
    records = scope_records(svc, caller, body.user_id, body.scope, EMPTY, held)
    stored = stored_profile(
        svc, caller, body.user_id, body.scope, body.max_chars, EMPTY, wait=False
    )
    if stored is None:
        return records, plan_profile(records, body.max_chars, now=now)
    items = [
        ProfileItem(i.text, tuple(i.memory_ids), tuple(i.msg_ids), i.entity) for i in stored.items
    ]
    return records, items


def _compose(
    records: Sequence[MemoryRecord],
    profile: Sequence[ProfileItem],
    recalled: Sequence[MemoryRecord],
    query: str | None,
    caller: Caller,
    body: ContextRequest,
    now: datetime,
) -> Planned:
    """The entities named, then the items kept and the text (``core.context``)."""
    notes = _notes(records, recalled, query, caller, body)
    return assemble(profile, recalled, notes, body.max_chars, now=now)


@router.post("/context", response_model=Envelope[Context])
async def context(
    body: ContextRequest, svc: ServicesDep, recaller: RecallerDep, caller: CallerDep
) -> Response:
    """The context for the agent's next turn within ``max_chars`` (module docstring).
    The profile is read and planned on a worker thread after recall (which loads the
    user into the hot cache); the rest on a worker thread too, never on the event loop
    every request shares."""
    caller.check_app(body.scope.app_id)
    turns = [(t.role.value, t.content) for t in body.messages or []]
    query = body.query or turn_query(turns)
    now = datetime.now(UTC)
    # recall first: it loads a user the hot cache does not hold (through the breaker and
    # the load pool), so the profile then decodes the held index instead of reading the
    # store (~14 ms), and a plan of unchanged memories is remembered (core.profile)
    recalled = await _recall(svc, recaller, caller, body, query) if query else []
    records, profile = await run_in_threadpool(_profile, svc, caller, body, now)
    made = await run_in_threadpool(_compose, records, profile, recalled, query, caller, body, now)
    if body.count_hit and recalled:  # off this thread, as recall's (recall_api.hits)
        shown = {m for i in made.items for m in i.memory_ids}
        hits = [r.memory_id for r in recalled if r.memory_id in shown]
        recaller.hits.submit(body.user_id, hits, caller.tenant)
    return ok(
        Context(items=[_item(i) for i in made.items], text=made.text, chars_used=len(made.text))
    )


def _item(i: Line) -> ContextItem:
    """One item as the answer says it (an unset entity stays out of it)."""
    named = {k: v for k, v in (("entity", i.entity), ("entity_id", i.entity_id)) if v}
    return ContextItem(
        kind=i.kind,
        text=i.text,
        memory_ids=list(i.memory_ids),
        msg_ids=list(i.msg_ids),
        **named,
    )
