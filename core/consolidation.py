"""Consolidation: compression beside archive and delete
(docs/architecture.md#consolidation-and-paged-out-memories).

A full scope first merges memories that say the same thing into one memory carrying all
their sources, so room is made without losing what was said; eviction
(:mod:`core.capacity`) only takes what merging could not free. Pure: records, the clock
and settings in; merge plans and merged records out.

**Who may merge.** ACTIVE memories that are not important, not time-bound (``expire_at``:
they leave on their own date) and not persona, and only within one *group*: same level,
app, session (SESSION memories), ownership and custom tags (a tag filter finds the same
memories before and after), procedural kept apart from the rest. Never across scopes.

**Which ones, into what** (:mod:`core.clustering`, :mod:`core.compression`): the same
fact repeated (the merged text is its most complete telling) or the same frame with
other values (the frame once, the values listed); never statements that are merely
related or share a session. A merge is a real compression — at most 80 % of its members'
length together and never over ``consolidation_max_chars`` — and holds at most
``consolidation_max_cluster`` source turns. Planning stops once enough room is made.

**What the merged memory carries.** Text: the plan's (an LLM may summarize instead,
bounded alike); the caller re-embeds it. Sources: all members' msg_ids in time order.
Weight: the highest *decayed* member weight, anchored now (a merge neither revives nor
ages what it merges), and that member's type. ``valid_at``: the earliest member's.
Recall counts add up. The id derives from the user, the members and the cause, so a
replay writes the same rows. Members become SUPERSEDED by it.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from core.capacity import IMPORTANT, TOTAL, Counters, dimensions, evict_target, limit_for
from core.clustering import choose
from core.hashing import content_hash, stable_id
from core.settings import Settings
from core.weights import is_persona, weight_now
from memstream.schemas.enums import Level, MemType, Status
from memstream.schemas.memory import MemoryRecord, tags_json

SEPARATOR = "; "
_TRAILING = " \t\n.;。；"


@dataclass(frozen=True, slots=True)
class Cluster:
    """Memories to merge into ``memory_id``; ``members`` in time order (valid_at, id);
    ``text`` the compressed text, ``kind`` how (compression.SAME or FRAME)."""

    memory_id: str
    members: tuple[str, ...]
    text: str
    kind: str


def mergeable(rec: MemoryRecord) -> bool:
    """May this memory be merged at all (ACTIVE, not important/time-bound/persona)?"""
    return (
        rec.status is Status.ACTIVE
        and not rec.is_important
        and rec.expire_at is None
        and not is_persona(rec.ownership, rec.custom_tags)
    )


def group_key(rec: MemoryRecord) -> tuple[str, ...]:
    """Memories merge only with memories of the same key (see the module docstring)."""
    session = (rec.session_id or "") if rec.level is Level.SESSION else ""
    procedural = "P" if rec.mem_type is MemType.PROCEDURAL else ""
    tags = tags_json(rec.custom_tags)
    return (str(rec.level), rec.app_id or "", session, str(rec.ownership), procedural, tags)


def bounded_join(texts: Sequence[str], max_chars: int) -> str:
    """Texts joined with "; " in the given order, clipped to ``max_chars`` with "…"."""
    parts = [t.strip().rstrip(_TRAILING) for t in texts]
    joined = SEPARATOR.join(p for p in parts if p)
    return joined if len(joined) <= max_chars else joined[: max_chars - 1].rstrip() + "…"


def merge_id(user_id: int, member_ids: Sequence[str], cause: str) -> str:
    return stable_id("m_", user_id, "merge", cause, *sorted(member_ids))


def admission_needs(
    counters: Counters, level: Level, app_id: str | None, settings: Settings, n_new: int = 1
) -> dict[str, int]:
    """Per full dimension of (level, app_id): how many to free to reach its evict target."""
    out: dict[str, int] = {}
    for dim in dimensions(level, app_id):
        limit = limit_for(dim, settings)
        if counters.get(dim) + n_new > limit:
            out[dim] = counters.get(dim) - min(evict_target(dim, settings), limit - n_new)
    return out


def high_water_needs(counters: Counters, settings: Settings) -> dict[str, int]:
    """Per dimension above the high-water mark: how many to free to reach the low-water mark."""
    out: dict[str, int] = {}
    for key in sorted(counters.counts, key=lambda k: (k == TOTAL, k)):
        if key.startswith(IMPORTANT):
            continue
        limit = limit_for(key, settings)
        if counters.get(key) > math.floor(settings.consolidation_high_water_ratio * limit + 1e-9):
            low = math.floor(settings.consolidation_low_water_ratio * limit + 1e-9)
            out[key] = counters.get(key) - low
    return out


def plan_consolidation(
    records: Sequence[MemoryRecord],
    needs: Mapping[str, int],
    now: datetime,
    settings: Settings,
    cause: str,
) -> list[Cluster]:
    """Clusters that free ``needs[dim]`` in each dimension (or as much as links allow).

    ``records`` are one user's ACTIVE memories. Scopes are served before ``total``; what a
    scope's merges free counts for total too.
    """
    recs = sorted(records, key=_when)
    taken: set[int] = set()
    chosen: list[tuple[list[int], str, str]] = []
    for dim in sorted(needs, key=lambda k: (k == TOTAL, k)):
        freed = sum(len(c) - 1 for c, _, _ in chosen if dim in _dims(recs[c[0]]))
        need = needs[dim] - freed
        if need <= 0:
            continue
        pool = [
            i
            for i in range(len(recs))
            if i not in taken and dim in _dims(recs[i]) and mergeable(recs[i])
        ]
        for merge in _cluster(recs, pool, need, now, settings):
            taken.update(merge[0])
            chosen.append(merge)
    out = []
    for members, text, kind in chosen:
        ids = [recs[i].memory_id for i in members]
        out.append(Cluster(merge_id(recs[members[0]].user_id, ids, cause), tuple(ids), text, kind))
    return sorted(out, key=lambda c: c.members)


def merged_record(
    members: Sequence[MemoryRecord], memory_id: str, text: str, now: datetime, settings: Settings
) -> MemoryRecord:
    """The consolidated memory of ``members`` (see the module docstring for each field)."""
    ordered = sorted(members, key=_when)
    weights = [_weight(m, now, settings) for m in ordered]
    top = ordered[max(range(len(ordered)), key=lambda i: (weights[i], -i))]
    msg_ids = list(dict.fromkeys(mid for m in ordered for mid in m.msg_ids))
    recalled = [m.last_recalled_at for m in ordered if m.last_recalled_at is not None]
    first = ordered[0]
    return dataclasses.replace(
        first,
        memory_id=memory_id,
        content=text,
        content_hash=content_hash(text),
        mem_type=top.mem_type,
        weight=max(weights),
        weight_at=now,
        created_at=now,
        updated_at=now,
        valid_at=first.valid_at,
        status=Status.ACTIVE,
        recall_count=sum(m.recall_count for m in ordered),
        last_recalled_at=max(recalled) if recalled else None,
        archived_at=None,
        deleted_at=None,
        invalid_at=None,
        superseded_by=None,
        source_msg_id=msg_ids[0] if msg_ids else None,
        source_msg_ids=msg_ids,
        custom_tags=dict(first.custom_tags),
        version=0,
        # every member's entities, once each (docs/architecture.md#entities)
        entities=list({x["entity_id"]: x for m in ordered[::-1] for x in m.entities}.values())[
            ::-1
        ],
    )


def superseded(member: MemoryRecord, merged_id: str, now: datetime) -> MemoryRecord:
    """The member's last version: SUPERSEDED by the merged memory, kept for history."""
    return dataclasses.replace(
        member, status=Status.SUPERSEDED, invalid_at=now, superseded_by=merged_id, updated_at=now
    )


# ---------------------------------------------------------------------------- internals
def _cluster(
    recs: list[MemoryRecord], pool: list[int], need: int, now: datetime, s: Settings
) -> list[tuple[list[int], str, str]]:
    """Merges within each group of ``pool`` (time order), best first, freeing ``need``."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i in pool:
        groups[group_key(recs[i])].append(i)
    found: list[tuple[list[int], str, str, float]] = []
    for g in groups.values():
        if len(g) < 2:
            continue
        weights = [_weight(recs[i], now, s) for i in g]
        for m in choose(
            [recs[i].content for i in g],
            [max(1, len(recs[i].msg_ids)) for i in g],
            weights,
            need,
            min_size=s.consolidation_min_cluster,
            max_sources=s.consolidation_max_cluster,
            max_chars=s.consolidation_max_chars,
        ):
            top = max(weights[k] for k in m.members)
            found.append(([g[k] for k in m.members], m.text, m.kind, top))
    found.sort(key=lambda f: (-len(f[0]), f[3], f[0][0]))
    out, freed = [], 0
    for members, text, kind, _ in found:
        if freed >= need:
            break
        out.append((members, text, kind))
        freed += len(members) - 1
    return out


def _dims(rec: MemoryRecord) -> tuple[str, str]:
    return dimensions(rec.level, rec.app_id)


def _when(rec: MemoryRecord) -> tuple[datetime, str]:
    return rec.valid_at, rec.memory_id


def _weight(rec: MemoryRecord, now: datetime, settings: Settings) -> float:
    return weight_now(
        rec.weight,
        rec.weight_at,
        now,
        settings.for_app(rec.app_id),
        is_important=rec.is_important,
        ownership=rec.ownership,
        custom_tags=rec.custom_tags,
    )
