"""Per-user capacity: counters, limits and the choice of evictions
(docs/architecture.md#consolidation-and-paged-out-memories).

Only ACTIVE memories count. Each one counts in exactly two dimensions: its scope
(``"global"`` for GLOBAL memories, ``"app:<id>"`` for APP memories, and for SESSION
memories the scope they belong to — their app, or global when they have none) and
``"total"``. An important memory also counts in ``"important:<dim>"`` for both.

Limits: global 500, per app 200, total 2000; important ≤ ``important_ratio`` (20 %)
of each, rounded down. When a write finds a dimension full, the lowest memories —
``weight ASC, last_recalled_at ASC`` (never recalled first), never important — are
evicted until that dimension is at ``evict_target_ratio`` (90 %) of its limit. An
evicted memory is ARCHIVED when its weight is still above ``archive_threshold``,
DELETED otherwise. If no room can be made, the write is refused (42901) and nothing
is evicted; an important mark over its quota is refused with 42902.

An ARCHIVED memory the capacity evicted is **paged out**, not lost (an archival memory,
retrieved on demand): default recall still finds it. Which ARCHIVED memories are paged
out is read from the record alone (:func:`paged_out`): its decayed weight is still above
the archive threshold and it has not expired. The lifecycle archives a decayed memory with its
weight below the threshold and an expired one past its ``expire_at``, so neither is
paged out; a paged-out memory that later decays below the threshold leaves default
recall too (the decay would have archived it anyway).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from core.settings import Settings
from core.timeutil import require_aware
from core.weights import memory_weight_now
from memstream.schemas.enums import Level, Status
from memstream.schemas.memory import MemoryRecord

GLOBAL = "global"
TOTAL = "total"
IMPORTANT = "important:"


def scope_key(level: Level, app_id: str | None) -> str:
    """The scope dimension of a memory: ``"global"`` or ``"app:<id>"``."""
    if level is Level.GLOBAL or not app_id:
        return GLOBAL
    return f"app:{app_id}"


def dimensions(level: Level, app_id: str | None) -> tuple[str, str]:
    """The two counters an ACTIVE memory occupies: its scope and ``"total"``."""
    return scope_key(level, app_id), TOTAL


def delta_for(
    level: Level, app_id: str | None, is_important: bool, sign: int = 1
) -> dict[str, int]:
    """Counter change when one memory enters (+1) or leaves (−1) the ACTIVE state."""
    keys = dimensions(level, app_id)
    delta = {k: sign for k in keys}
    if is_important:
        delta.update({IMPORTANT + k: sign for k in keys})
    return delta


def limit_for(key: str, settings: Settings) -> int:
    """The limit of a counter key; ``important:<dim>`` is ⌊ratio·limit(dim)⌋."""
    if key.startswith(IMPORTANT):
        base = limit_for(key[len(IMPORTANT) :], settings)
        return math.floor(settings.important_ratio * base + 1e-9)
    if key == GLOBAL:
        return settings.capacity_global
    if key == TOTAL:
        return settings.capacity_total
    if key.startswith("app:"):
        return settings.for_app(key[4:]).capacity_per_app
    raise ValueError(f"unknown capacity dimension {key!r}")


def evict_target(key: str, settings: Settings) -> int:
    """Count a full dimension is brought down to: ⌊evict_target_ratio·limit⌋ (90 %)."""
    return math.floor(settings.evict_target_ratio * limit_for(key, settings) + 1e-9)


@dataclass
class Counters:
    """One user's ACTIVE-memory counts by dimension key (missing key = 0)."""

    counts: dict[str, int] = field(default_factory=dict)

    def get(self, key: str) -> int:
        return self.counts.get(key, 0)

    def apply(self, delta: Mapping[str, int]) -> None:
        """Add ``delta`` in place; a count that would go negative (drift) stops at 0."""
        for key, d in delta.items():
            value = max(0, self.counts.get(key, 0) + d)
            if value:
                self.counts[key] = value
            else:
                self.counts.pop(key, None)

    def applied(self, delta: Mapping[str, int]) -> Counters:
        """A copy with ``delta`` applied; this one unchanged."""
        out = Counters(dict(self.counts))
        out.apply(delta)
        return out


@dataclass(frozen=True, slots=True)
class EvictionCandidate:
    """An ACTIVE memory that could make room; the caller supplies its decayed weight."""

    memory_id: str
    level: Level
    app_id: str | None
    weight_now: float
    last_recalled_at: datetime | None
    is_important: bool = False


@dataclass(frozen=True, slots=True)
class Eviction:
    """One memory to move out of ACTIVE to make room."""

    memory_id: str
    level: Level
    app_id: str | None
    to_status: Status  # ARCHIVED or DELETED
    weight: float
    dimension: str  # the full dimension it was evicted for

    @property
    def counter_delta(self) -> dict[str, int]:
        return delta_for(self.level, self.app_id, False, -1)


@dataclass(frozen=True, slots=True)
class CapacityDecision:
    """Outcome of a capacity check: allowed (after ``evictions``) or refused (42901)."""

    allowed: bool
    evictions: tuple[Eviction, ...] = ()
    full: tuple[str, ...] = ()  # dimensions that were full before eviction
    blocked_by: tuple[str, ...] = ()  # dimensions still full: the reason for 42901

    @property
    def counter_delta(self) -> dict[str, int]:
        """Counter change of the evictions (not of the admitted memories)."""
        out: dict[str, int] = {}
        for ev in self.evictions:
            for key, d in ev.counter_delta.items():
                out[key] = out.get(key, 0) + d
        return out


def eviction_order(candidates: Iterable[EvictionCandidate]) -> list[EvictionCandidate]:
    """Non-important candidates, weight ASC, last_recalled_at ASC (None first), id ASC."""

    def key(c: EvictionCandidate) -> tuple[float, int, float, str]:
        recalled = c.last_recalled_at
        ts = require_aware(recalled).timestamp() if recalled is not None else 0.0
        return (c.weight_now, 0 if recalled is None else 1, ts, c.memory_id)

    return sorted((c for c in candidates if not c.is_important), key=key)


def _evict(
    work: Counters,
    full: Iterable[str],
    candidates: Iterable[EvictionCandidate],
    settings: Settings,
    n_new: int = 0,
) -> list[Eviction]:
    """Evict in order until each full dimension is at its target; updates ``work``.

    The target is 90 % of the limit, lower still when a batch of ``n_new`` needs more room.
    """
    ordered = eviction_order(candidates)
    chosen: list[Eviction] = []
    taken: set[str] = set()
    for dim in full:
        target = min(evict_target(dim, settings), limit_for(dim, settings) - n_new)
        for c in ordered:
            if work.get(dim) <= target:
                break
            if c.memory_id in taken or dim not in dimensions(c.level, c.app_id):
                continue
            taken.add(c.memory_id)
            ev = Eviction(
                c.memory_id,
                c.level,
                c.app_id,
                eviction_status(c.weight_now, settings),
                c.weight_now,
                dim,
            )
            work.apply(ev.counter_delta)
            chosen.append(ev)
    return chosen


def plan_admission(
    counters: Counters,
    level: Level,
    app_id: str | None,
    candidates: Iterable[EvictionCandidate],
    settings: Settings,
    n_new: int = 1,
) -> CapacityDecision:
    """Decide whether ``n_new`` memories of (level, app_id) fit, and what to evict first.

    ``candidates`` should hold the user's ACTIVE memories (at least the lowest ones of
    the dimensions concerned). Evicting one memory frees it in all of its dimensions, so
    making room in ``app:x`` also makes room in ``total``. When room cannot be made the
    decision carries no evictions: nothing is lost for a write that is refused anyway.
    """
    dims = dimensions(level, app_id)
    full = tuple(d for d in dims if counters.get(d) + n_new > limit_for(d, settings))
    if not full:
        return CapacityDecision(allowed=True)
    work = Counters(dict(counters.counts))
    chosen = _evict(work, full, candidates, settings, n_new)
    blocked = tuple(d for d in dims if work.get(d) + n_new > limit_for(d, settings))
    if blocked:
        return CapacityDecision(allowed=False, full=full, blocked_by=blocked)
    return CapacityDecision(allowed=True, evictions=tuple(chosen), full=full)


def plan_trim(
    counters: Counters, candidates: Iterable[EvictionCandidate], settings: Settings
) -> CapacityDecision:
    """The patrol's check (巡检): every dimension at or over its limit goes down to 90 %.

    ``allowed`` is False when some dimension could not be brought below its limit
    (e.g. it is full of important memories); the evictions found are still returned.
    """
    keys = sorted(k for k in counters.counts if not k.startswith(IMPORTANT))
    keys.sort(key=lambda k: k == TOTAL)  # scopes first: their evictions also relieve total
    full = tuple(k for k in keys if counters.get(k) >= limit_for(k, settings))
    if not full:
        return CapacityDecision(allowed=True)
    work = Counters(dict(counters.counts))
    chosen = _evict(work, full, candidates, settings)
    blocked = tuple(k for k in full if work.get(k) >= limit_for(k, settings))
    return CapacityDecision(not blocked, tuple(chosen), full, blocked)


def eviction_status(weight: float, settings: Settings) -> Status:
    """ARCHIVED while the weight is above the archive threshold, DELETED at or below it."""
    return Status.ARCHIVED if weight > settings.archive_threshold else Status.DELETED


def paged_out(m: MemoryRecord, now: datetime, settings: Settings) -> bool:
    """True for a memory the capacity archived while it was still worth keeping: ARCHIVED,
    its weight decayed to ``now`` still above ``archive_threshold``, not expired. Default
    recall searches these beside the ACTIVE ones (``core.user_index.UserIndex.paged``;
    ``UserIndex.paged_rows`` is the same rule over its columns)."""
    if m.status is not Status.ARCHIVED:
        return False
    if m.expire_at is not None and require_aware(m.expire_at) <= require_aware(now):
        return False
    return memory_weight_now(m, now, settings) > settings.archive_threshold


def important_blocked(
    counters: Counters, level: Level, app_id: str | None, settings: Settings, n_new: int = 1
) -> tuple[str, ...]:
    """Dimensions whose important quota ``n_new`` more important marks would exceed (42902).

    Empty means the mark is allowed. Important memories are never evicted, so this is
    a plain refusal.
    """
    keys = (IMPORTANT + d for d in dimensions(level, app_id))
    return tuple(k for k in keys if counters.get(k) + n_new > limit_for(k, settings))
