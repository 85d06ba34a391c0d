"""The entity view: a user's entities as their memories' links show them
(docs/api.md#entities, docs/architecture.md#entities).

Pure: the caller hands in the records it may read (``recall_api.access``) and, for a
request's scope, :func:`in_scope`; nothing here reads a store. An entity is what the
records' ``entities`` links (``memstream.schemas.memory.EntityLink``) say about one ``entity_id``:

* **which memories count**: the ones on a timeline (:data:`TIMELINE`): ACTIVE, ARCHIVED
  and SUPERSEDED, so a fact that was once true stays traceable ("lived in Shenzhen, then
  moved to Guangzhou", both shown). A DELETED memory never counts: what a user asked to
  forget (or purged) names no entity and shows in no view;
* **name and type**: those of the newest link (by the memory's ``valid_at``, then
  ``created_at``): a rename shows at once;
* **aliases**: every other form the links give (their names and ``said`` forms), newest
  first, each once under the caller's folding (case, possessive);
* **memories**: how many ACTIVE memories link it (0: only history names it);
  **last_seen**: the newest ``valid_at`` among those, else among its history;
* **order**: most memories first, then the most recently seen, then by name and id, so
  a page is stable.

Names compare in the form resolution keys them by (``core.entity_keys.entity_key``:
NFKC, case, possessive), so "anna's" finds "Anna". A name may match several entities
(two apps' Annas): every match is answered, in the order above.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from core.entity_keys import entity_key
from memstream.schemas.enums import Level, Status
from memstream.schemas.memory import EntityLink, MemoryRecord

TIMELINE = frozenset({Status.ACTIVE, Status.ARCHIVED, Status.SUPERSEDED})

Fold = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class EntityView:
    """One entity of a user as the view answers it."""

    entity_id: str
    name: str
    type: str
    aliases: tuple[str, ...]
    memories: int
    last_seen: datetime


def on_timeline(rec: MemoryRecord) -> bool:
    """True for a memory an entity's view may show (never a DELETED one)."""
    return rec.status in TIMELINE


def in_scope(rec: MemoryRecord, *, include_global: bool, app_id: str | None) -> bool:
    """A request's scope, as recall reads it: the GLOBAL memories with
    ``include_global``, and the memories of ``app_id`` (its APP and SESSION ones)."""
    if rec.level is Level.GLOBAL:
        return include_global
    return app_id is not None and rec.app_id == app_id


def _memo(fold: Fold) -> Fold:
    """``fold`` remembered for one call: a user's links repeat a few names many times."""
    known: dict[str, str] = {}

    def folded(text: str) -> str:
        key = known.get(text)
        if key is None:
            key = known[text] = fold(text)
        return key

    return folded


def _newest_first(rec: MemoryRecord) -> tuple[datetime, datetime, str]:
    return (rec.valid_at, rec.created_at, rec.memory_id)


def _links(records: Iterable[MemoryRecord]) -> dict[str, list[tuple[MemoryRecord, EntityLink]]]:
    """Each entity's (memory, link) pairs over the timeline's memories, newest first;
    a memory linking one entity twice counts once (its first link)."""
    by_id: dict[str, list[tuple[MemoryRecord, EntityLink]]] = {}
    for rec in sorted(filter(on_timeline, records), key=_newest_first, reverse=True):
        seen: set[str] = set()
        for link in rec.entities:
            eid = link["entity_id"]
            if eid and eid not in seen:
                seen.add(eid)
                by_id.setdefault(eid, []).append((rec, link))
    return by_id


def _view(eid: str, pairs: Sequence[tuple[MemoryRecord, EntityLink]], fold: Fold) -> EntityView:
    _, newest = pairs[0]
    name = newest["name"] or newest["said"] or eid
    taken = {fold(name)}
    aliases: list[str] = []
    for _, link in pairs:
        for form in (link["name"], link["said"]):
            key = fold(form) if form else ""
            if key and key not in taken:
                taken.add(key)
                aliases.append(form)
    active = [rec for rec, _ in pairs if rec.status is Status.ACTIVE]
    seen_in = active or [rec for rec, _ in pairs]
    return EntityView(
        entity_id=eid,
        name=name,
        type=newest["type"],
        aliases=tuple(aliases),
        memories=len(active),
        last_seen=max(rec.valid_at for rec in seen_in),
    )


def aggregate(records: Iterable[MemoryRecord], *, fold: Fold = entity_key) -> list[EntityView]:
    """Every entity the records link, in the view's order (module docstring)."""
    fold = _memo(fold)
    views = [_view(eid, pairs, fold) for eid, pairs in _links(records).items()]
    views.sort(key=lambda v: (v.name.casefold(), v.entity_id))  # stable sorts: the last
    views.sort(key=lambda v: v.last_seen, reverse=True)  # key decides first
    views.sort(key=lambda v: v.memories, reverse=True)
    return views


def of_type(views: Iterable[EntityView], type_: str) -> list[EntityView]:
    """The entities of one type (its name compared case-folded)."""
    want = type_.casefold()
    return [v for v in views if v.type.casefold() == want]


def matching(
    views: Iterable[EntityView],
    *,
    entity_id: str | None = None,
    name: str | None = None,
    fold: Fold = entity_key,
) -> list[EntityView]:
    """The entities an ``entity_id`` or a ``name`` (or one of its aliases) names, in the
    order of ``views``; a name that folds to nothing matches nothing."""
    if entity_id is not None:
        return [v for v in views if v.entity_id == entity_id]
    key = fold(name) if name is not None else ""
    if not key:
        return []
    return [v for v in views if fold(v.name) == key or any(fold(a) == key for a in v.aliases)]


def timeline(records: Iterable[MemoryRecord], entity_id: str) -> list[MemoryRecord]:
    """The entity's memories, history included, in time order (``valid_at``, then
    ``created_at``): what was once true before what replaced it."""
    linked = [
        r
        for r in records
        if on_timeline(r) and any(link["entity_id"] == entity_id for link in r.entities)
    ]
    return sorted(linked, key=_newest_first)
