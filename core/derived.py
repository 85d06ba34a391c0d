"""The stored profile: a derived memory per (user, scope), kept current by the writer
(docs/architecture.md#the-profile).

Pure: the user's ACTIVE memories, the profile a scope holds now and the clock in; the
profile's next version out (or None when it would not change). The keyed writer calls
:func:`next_profile` after every batch that changed one of the user's memories
(``dataflows.ingest.derive``), so the profile is current when the call that changed a
memory returns; the profile route reads the stored version and cuts it to the caller's
budget (:func:`stored_items`, :func:`cut`) instead of planning it again.

A profile is one memory of ``mem_type`` PROFILE:

- **one per scope a key may read:** the GLOBAL profile (``memory_id``
  ``profile_id(tenant, user, None)``, level GLOBAL) is planned from the GLOBAL memories
  only; an app's (level APP) from that app's APP memories and the GLOBAL ones;
- **its words** are its items' texts, one per line, in reading order; its
  ``custom_tags["profile"]`` holds each item's citations (memory ids, source turns, the
  entity it is about, and the earliest ``expire_at`` of what it cites: an item whose
  memory ran out is not read after that), its ``source_msg_ids`` every cited turn, and
  its ``entities`` the links of the entities its items are about (their names sealed as
  every memory's are);
- **planned at** :data:`STORED_CHARS`: a caller's smaller budget takes the items in
  order that fit whole; a larger one is planned on read;
- a scope left with nothing to say retires its profile (DELETED);
- with an LLM, the writer writes the plan first and asks for a summary of it after
  (``dataflows.ingest.derive``): the summary (:func:`summarized`) names the plan it says
  in ``custom_tags["profile_plan"]``, so the same plan later keeps it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from datetime import datetime

from core.hashing import content_hash, stable_id
from core.profile import ProfileItem, plan_profile
from memstream.schemas.enums import DERIVED_TYPES, Level, MemType, Ownership, Status
from memstream.schemas.json_types import JsonObject, JsonValue
from memstream.schemas.memory import EntityLink, MemoryRecord

STORED_CHARS = 2000  # the stored plan's budget (profile's and context's default); more: on read
TAG = "profile"  # custom_tags key of the items' citations
PLAN_TAG = "profile_plan"  # custom_tags key: the plan an LLM summary says (its hash)
PREFIX = "p_"  # a profile's memory id: PREFIX + hex (``profile_id``)


def is_derived(rec: MemoryRecord) -> bool:
    return rec.mem_type in DERIVED_TYPES


def profile_id(tenant: str, user_id: int, app_id: str | None) -> str:
    """The stored profile of a scope: the user's GLOBAL one (``app_id`` None) or an app's."""
    return stable_id(PREFIX, tenant, user_id, app_id or "")


def is_profile_id(memory_id: str) -> bool:
    """A profile's id (every other memory id is ``m_`` + hex)."""
    return memory_id.startswith(PREFIX)


def in_scope(rec: MemoryRecord, app_id: str | None) -> bool:
    """Does the profile of ``app_id`` (None: GLOBAL) read this memory?"""
    if rec.level is Level.GLOBAL:
        return True
    return app_id is not None and rec.level is Level.APP and rec.app_id == app_id


def scopes(records: Iterable[MemoryRecord]) -> set[str | None]:
    """The scopes a user's memories give a profile: GLOBAL and each app with APP memories."""
    return {None} | {r.app_id for r in records if r.level is Level.APP and r.app_id}


def next_profile(
    records: Sequence[MemoryRecord],
    app_id: str | None,
    held: MemoryRecord | None,
    *,
    tenant: str,
    user_id: int,
    now: datetime,
) -> MemoryRecord | None:
    """The scope's profile as ``records`` (the user's ACTIVE memories) say it, when it
    differs from ``held`` (the stored one, or None); None when nothing changes."""
    items = plan_of(records, app_id, now)
    by_id = {r.memory_id: r for r in records}
    if not items:
        if held is None or held.status is not Status.ACTIVE:
            return None
        return dataclasses.replace(held, status=Status.DELETED, deleted_at=now, updated_at=now)
    rec = _record(items, by_id, app_id, tenant=tenant, user_id=user_id, now=now)
    if (
        held is not None
        and held.status is Status.ACTIVE
        and (_same(held, rec) or held.custom_tags.get(PLAN_TAG) == rec.content_hash)
    ):
        return None  # the same plan, or an LLM summary of it
    if held is not None:
        rec = dataclasses.replace(rec, created_at=held.created_at, valid_at=held.valid_at)
    return rec


def summarized(
    held: MemoryRecord, items: Sequence[ProfileItem], records: Sequence[MemoryRecord], now: datetime
) -> MemoryRecord:
    """``held`` (a plan) said as ``items``, the LLM's summary of it: the same scope,
    remembering which plan it summarises (a later plan that is the same keeps it)."""
    by_id = {r.memory_id: r for r in records}
    rec = _record(items, by_id, held.app_id, tenant=held.tenant_id, user_id=held.user_id, now=now)
    tags: JsonObject = {**rec.custom_tags, PLAN_TAG: held.content_hash}
    return dataclasses.replace(
        rec, custom_tags=tags, created_at=held.created_at, valid_at=held.valid_at
    )


def plan_of(
    records: Sequence[MemoryRecord], app_id: str | None, now: datetime
) -> list[ProfileItem]:
    """The plan a scope's stored profile is made from."""
    return plan_profile([r for r in records if in_scope(r, app_id)], STORED_CHARS, now=now)


def cited(rec: MemoryRecord) -> list[str]:
    """Every memory id the profile's items cite, in order, without repeats."""
    return list(dict.fromkeys(m for i in stored_items(rec) for m in i.memory_ids))


@dataclasses.dataclass(frozen=True, slots=True)
class StoredItem:
    text: str
    memory_ids: tuple[str, ...]
    msg_ids: tuple[str, ...]
    entity: str | None
    until: datetime | None  # the earliest expire_at of what it cites


def stored_items(rec: MemoryRecord) -> list[StoredItem]:
    """The profile's items as stored (its lines and its tag's citations, in order)."""
    lines = rec.content.split("\n") if rec.content else []
    raw = rec.custom_tags.get(TAG)
    cites = raw if isinstance(raw, list) else []
    names = {link["entity_id"]: link["name"] for link in rec.entities}
    out = []
    for text, cite in zip(lines, cites, strict=False):
        if not isinstance(cite, dict):
            continue
        until = cite.get("until")
        entity_id = cite.get("entity_id")
        out.append(
            StoredItem(
                text,
                _strs(cite.get("memory_ids")),
                _strs(cite.get("msg_ids")),
                names.get(entity_id) if isinstance(entity_id, str) else None,
                datetime.fromisoformat(until) if isinstance(until, str) else None,
            )
        )
    return out


def cut(items: Sequence[StoredItem], max_chars: int, now: datetime) -> list[StoredItem]:
    """The items in order that fit ``max_chars`` whole, those past their ``until`` out."""
    kept, used = [], 0
    for item in items:
        if item.until is not None and item.until <= now:
            continue
        if used + len(item.text) <= max_chars:
            kept.append(item)
            used += len(item.text)
    return kept


# ---------------------------------------------------------------------------- internals
def _record(
    items: Sequence[ProfileItem],
    by_id: dict[str, MemoryRecord],
    app_id: str | None,
    *,
    tenant: str,
    user_id: int,
    now: datetime,
) -> MemoryRecord:
    cites: list[JsonValue] = []
    links: dict[str, EntityLink] = {}
    for item in items:
        members = [by_id[m] for m in item.memory_ids]
        ends = [m.expire_at for m in members if m.expire_at is not None]
        cite: JsonObject = {"memory_ids": list(item.memory_ids), "msg_ids": list(item.msg_ids)}
        if item.entity_id is not None:
            cite["entity_id"] = item.entity_id
            link = next(x for m in members for x in m.entities if x["entity_id"] == item.entity_id)
            links[item.entity_id] = EntityLink(
                entity_id=item.entity_id, name=link["name"], type=link["type"], said=""
            )
        if ends:
            cite["until"] = min(ends).isoformat()
        cites.append(cite)
    text = "\n".join(i.text.replace("\n", " ") for i in items)
    return MemoryRecord(
        memory_id=profile_id(tenant, user_id, app_id),
        user_id=user_id,
        tenant_id=tenant,
        content=text,
        content_hash=content_hash(text),
        level=Level.APP if app_id else Level.GLOBAL,
        ownership=Ownership.AGENT,
        mem_type=MemType.PROFILE,
        weight=1.0,
        weight_at=now,
        created_at=now,
        updated_at=now,
        valid_at=now,
        app_id=app_id,
        source_msg_ids=list(dict.fromkeys(m for i in items for m in i.msg_ids)),
        custom_tags={TAG: cites},
        entities=list(links.values()),
    )


def _same(a: MemoryRecord, b: MemoryRecord) -> bool:
    return (a.content, a.custom_tags, a.entities) == (b.content, b.custom_tags, b.entities)


def _strs(value: JsonValue | None) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
