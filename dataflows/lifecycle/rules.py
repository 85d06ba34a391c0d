"""Lifecycle rules as pure functions: archive, expire, purge, recall recovery
(docs/architecture.md#lifecycle).

The only clock is the ``now`` argument, so a pass run with ``now = T + 91 days`` decides
exactly what waiting 91 days would. Per memory, at ``now``:

- ACTIVE and ``expire_at <= now`` → ARCHIVE ("expired"; checked first);
- ACTIVE and the lazily decayed weight ``< archive_threshold`` → ARCHIVE ("decayed"):
  important memories decay with α = 0.1, persona AGENT memories never;
- DELETED for more than ``deleted_retention_days`` → PURGE;
- ARCHIVED for more than ``archived_retention_days`` → PURGE.

SUPERSEDED memories are history for time travel and are left alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from core.settings import Settings
from core.timeutil import days_between, require_aware
from core.weights import Weighted, initial_weight, memory_weight_now, recover
from memstream.schemas.enums import Status
from memstream.schemas.memory import MemoryRecord


class Action(StrEnum):
    DECAYED = "decayed"  # ACTIVE → ARCHIVED: weight fell below the archive threshold
    EXPIRED = "expired"  # ACTIVE → ARCHIVED: expire_at reached
    PURGE_DELETED = "purge_deleted"  # DELETED past its retention → physically removed
    PURGE_ARCHIVED = "purge_archived"  # ARCHIVED past its retention → physically removed

    @property
    def archives(self) -> bool:
        return self in (Action.DECAYED, Action.EXPIRED)


class Lifecycled(Weighted, Protocol):
    """What the rules read of a memory (a MemoryRecord, or a lean row of a scan): what
    its decayed weight needs (``core.weights.Weighted``) and its status and dates."""

    @property
    def memory_id(self) -> str: ...
    @property
    def status(self) -> Status: ...
    @property
    def expire_at(self) -> datetime | None: ...
    @property
    def archived_at(self) -> datetime | None: ...
    @property
    def deleted_at(self) -> datetime | None: ...
    @property
    def updated_at(self) -> datetime: ...


@dataclass(frozen=True, slots=True)
class Planned:
    """One lifecycle operation on one memory; ``weight`` is its decayed weight at ``now``."""

    memory_id: str
    action: Action
    weight: float


def decayed(m: Lifecycled, now: datetime, settings: Settings) -> float:
    return memory_weight_now(m, now, settings)


def plan_memory(m: Lifecycled, now: datetime, settings: Settings) -> Planned | None:
    """The operation due on ``m`` at ``now``, or None."""
    now = require_aware(now, "now")
    if m.status is Status.ACTIVE:
        w = decayed(m, now, settings)
        if m.expire_at is not None and require_aware(m.expire_at) <= now:
            return Planned(m.memory_id, Action.EXPIRED, w)
        if w < settings.archive_threshold:
            return Planned(m.memory_id, Action.DECAYED, w)
        return None
    if m.status is Status.DELETED:
        since, keep, action = m.deleted_at, settings.deleted_retention_days, Action.PURGE_DELETED
    elif m.status is Status.ARCHIVED:
        since, keep, action = m.archived_at, settings.archived_retention_days, Action.PURGE_ARCHIVED
    else:
        return None
    if days_between(since or m.updated_at, now) > keep:
        return Planned(m.memory_id, action, m.weight)
    return None


def plan_user(memories: Iterable[Lifecycled], now: datetime, settings: Settings) -> list[Planned]:
    """The operations due on one user's memories at ``now``."""
    return [p for m in memories if (p := plan_memory(m, now, settings)) is not None]


def archived(rec: MemoryRecord, planned: Planned, now: datetime) -> MemoryRecord:
    """The ARCHIVED version: the decayed weight becomes the new anchor (as eviction does)."""
    return dataclasses.replace(
        rec,
        status=Status.ARCHIVED,
        archived_at=now,
        weight=planned.weight,
        weight_at=now,
        updated_at=now,
    )


def archive_reason(action: Action, settings: Settings) -> str:
    if action is Action.EXPIRED:
        return "expired"
    return f"decayed below {settings.archive_threshold:.2f}"


def purge_reason(action: Action, settings: Settings) -> str:
    if action is Action.PURGE_DELETED:
        return f"deleted more than {settings.deleted_retention_days:g} days ago"
    return f"archived more than {settings.archived_retention_days:g} days ago"


def recovered(rec: MemoryRecord, at: datetime, hits: int, settings: Settings) -> MemoryRecord:
    """Recall recovery: ``w = min(w_decayed + Δ, w_init)`` with ``weight_at = last_recalled_at = at``.

    The ceiling is the memory's own initial weight (type, important mark, time-bound).
    A hit older than the current anchor (late delivery) recovers from the anchor and never
    moves it back in time.
    """
    at = require_aware(at, "at")
    cap = initial_weight(
        rec.ownership,
        rec.mem_type,
        settings,
        is_important=rec.is_important,
        time_bound=rec.expire_at is not None,
    )
    w = recover(decayed(rec, at, settings), cap, settings.recall_recovery_delta)
    last = rec.last_recalled_at
    return dataclasses.replace(
        rec,
        weight=w,
        weight_at=max(require_aware(rec.weight_at), at),
        last_recalled_at=at if last is None else max(require_aware(last), at),
        recall_count=rec.recall_count + max(hits, 1),
    )
