"""Memory weight: initial value, lazy exponential decay, recall recovery
(docs/architecture.md#weights-and-decay).

A weight is never rewritten by a clock. A memory stores ``(weight, weight_at)``; its
weight at any instant is derived on read with ``w(t) = w0·e^(−λ·α·t)``, t in days
since ``weight_at``. Only events move the anchor: a recall hit (recovery) or an
evolution step. The lifecycle flow therefore needs no per-memory tick; it asks
:func:`below_threshold_at` when a memory will cross the archive threshold.

Persona memories (an agent's stable self-description) do not decay at all. A memory is
a persona memory when its ownership is AGENT **and** its ``custom_tags`` carry
``"persona": true`` (JSON true, or the string "true" in any case). USER memories never
count as persona, whatever their tags say.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Protocol

from core.settings import Settings
from core.timeutil import SECONDS_PER_DAY, days_between, require_aware
from memstream.schemas.enums import MemType, Ownership
from memstream.schemas.json_types import JsonValue

PERSONA_TAG = "persona"


def type_weight(ownership: Ownership, mem_type: MemType, settings: Settings) -> float:
    """The initial-weight table entry for (ownership, type): the ceiling of plain recovery."""
    prefix = "user" if ownership is Ownership.USER else "agent"
    return float(getattr(settings, f"weight_{prefix}_{mem_type.value.lower()}"))


def initial_weight(
    ownership: Ownership,
    mem_type: MemType,
    settings: Settings,
    *,
    is_important: bool = False,
    time_bound: bool = False,
) -> float:
    """Weight of a new memory (also the value UPDATE resets to).

    A time-bound event takes ``weight_time_bound`` whatever its type; the important
    mark lifts to ``weight_important`` but never lowers a higher value ("原值更高则保持").
    """
    base = settings.weight_time_bound if time_bound else type_weight(ownership, mem_type, settings)
    return max(base, settings.weight_important) if is_important else base


def is_persona(ownership: Ownership, custom_tags: Mapping[str, JsonValue] | None) -> bool:
    """True for AGENT memories tagged ``persona: true``; those are exempt from decay."""
    if ownership is not Ownership.AGENT or not custom_tags:
        return False
    value = custom_tags.get(PERSONA_TAG)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def decay_alpha(
    settings: Settings,
    *,
    is_important: bool,
    ownership: Ownership = Ownership.USER,
    custom_tags: Mapping[str, JsonValue] | None = None,
) -> float:
    """α of the decay law: 0 for persona memories, the important α, or the normal α."""
    if is_persona(ownership, custom_tags):
        return 0.0
    return settings.decay_alpha_important if is_important else settings.decay_alpha_normal


def decay(w0: float, days: float, *, lam: float, alpha: float) -> float:
    """``w0·e^(−λ·α·t)``; a negative t (clock skew) counts as 0 so weight never grows."""
    return w0 * math.exp(-lam * alpha * max(days, 0.0))


def decayed_weight(
    w0: float,
    anchor: datetime,
    now: datetime,
    *,
    lam: float,
    alpha: float,
) -> float:
    """Weight at ``now`` of a memory that had ``w0`` at ``anchor`` (its ``weight_at``)."""
    return decay(w0, days_between(anchor, now), lam=lam, alpha=alpha)


def weight_now(
    w0: float,
    anchor: datetime,
    now: datetime,
    settings: Settings,
    *,
    is_important: bool,
    ownership: Ownership = Ownership.USER,
    custom_tags: Mapping[str, JsonValue] | None = None,
) -> float:
    """The lazily decayed weight with λ and α taken from settings and the memory's marks."""
    alpha = decay_alpha(
        settings, is_important=is_important, ownership=ownership, custom_tags=custom_tags
    )
    return decayed_weight(w0, anchor, now, lam=settings.decay_lambda, alpha=alpha)


class Weighted(Protocol):
    """What :func:`memory_weight_now` reads of a memory (a MemoryRecord, a scanned row);
    read-only members, so a record's ``dict`` of tags is a ``Mapping`` here."""

    @property
    def weight(self) -> float: ...
    @property
    def weight_at(self) -> datetime: ...
    @property
    def is_important(self) -> bool: ...
    @property
    def ownership(self) -> Ownership: ...
    @property
    def custom_tags(self) -> Mapping[str, JsonValue]: ...


def memory_weight_now(m: Weighted, now: datetime, settings: Settings) -> float:
    """:func:`weight_now` of a memory, its marks read from it."""
    return weight_now(
        m.weight,
        m.weight_at,
        now,
        settings,
        is_important=m.is_important,
        ownership=m.ownership,
        custom_tags=m.custom_tags,
    )


def weight_at_us(
    w0: float,
    anchor_us: int,
    now_us: int,
    settings: Settings,
    *,
    is_important: bool,
    persona: bool,
) -> float:
    """:func:`weight_now` of a memory whose anchor is µs since the epoch and whose
    :func:`is_persona` is known (the hot cache's columns): the same number, without a
    datetime or the tags."""
    if persona:
        alpha = 0.0
    else:
        alpha = settings.decay_alpha_important if is_important else settings.decay_alpha_normal
    days = (now_us - anchor_us) / 10**6 / SECONDS_PER_DAY
    return decay(w0, days, lam=settings.decay_lambda, alpha=alpha)


def recover(w_decayed: float, w_init_type: float, delta: float) -> float:
    """Recall recovery ``min(w_decayed + Δ, w_init_type)``.

    A recall must never *lower* a weight: when the current weight already sits above
    the ceiling (a MERGE kept the higher of two, or the table was reconfigured) it is
    kept as it is. The caller also moves ``weight_at = last_recalled_at = hit time``.
    """
    return max(w_decayed, min(w_decayed + delta, w_init_type))


def days_until_below(w0: float, threshold: float, *, lam: float, alpha: float) -> float:
    """Days until ``w0`` decays down to ``threshold``: 0 when already there, inf if never.

    Normal memory: ``ln(0.80/0.10)/λ`` = 90 days; important (α = 0.1): 900 days.
    """
    if w0 <= threshold:
        return 0.0
    if threshold <= 0 or lam * alpha <= 0:
        return math.inf
    return math.log(w0 / threshold) / (lam * alpha)


def below_threshold_at(
    w0: float,
    anchor: datetime,
    threshold: float,
    *,
    lam: float,
    alpha: float,
) -> datetime | None:
    """The instant a memory anchored at ``anchor`` reaches ``threshold``; None if never."""
    days = days_until_below(w0, threshold, lam=lam, alpha=alpha)
    if math.isinf(days):
        return None
    return require_aware(anchor, "anchor") + timedelta(days=days)
