"""Recall ranking: over-fetch size, channel fusion, threshold, final score (DESIGN §7).

Two stages, as the design document's chapter 7 puts it: first *filter* on relevance
(``relevance ≥ min_relevance``), then *order* by ``final = W_rel·relevance +
(1 − W_rel)·weight`` (0.7 / 0.3 by default). Relevance must come first because a
strong but unrelated memory is still unrelated; weight only separates relevant ones.

Relevance fuses two channels, both mapped into [0, 1]:

* dense: cosine similarity in [−1, 1] clamped to ``max(0, cos)`` (a negative cosine
  says "unrelated", not "anti-relevant");
* lexical: the BM25 coverage of :meth:`core.lexical.BM25Index.normalized`.

``relevance = max(dense, lexical_weight·lexical)``. The max keeps the threshold
meaning "at least one channel finds this relevant": an exact lexical hit on a name
(coverage 1.0) passes ``min_relevance`` even when the English embedding model cannot
read the Chinese text, while two weak signals never add up to a false pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from core.settings import Settings


@dataclass(frozen=True, slots=True)
class Candidate:
    """One memory offered to ranking by either channel (or both)."""

    memory_id: str
    weight_now: float  # decayed weight at query time, in [0, 1]
    dense: float | None = None  # cosine in [-1, 1]; None when the dense channel missed it
    lexical: float | None = None  # normalized BM25 in [0, 1]; None when no term matched


@dataclass(frozen=True, slots=True)
class Ranked:
    """A candidate that passed the threshold, with the numbers that placed it."""

    memory_id: str
    relevance: float
    weight: float
    score: float


def overfetch_size(top_k: int, factor: int, minimum: int) -> int:
    """How many neighbours to fetch before filtering: ``max(factor·top_k, minimum)``."""
    if top_k < 1:
        raise ValueError("top_k must be >= 1")
    return max(factor * top_k, minimum)


def overfetch_for(top_k: int, settings: Settings) -> int:
    """:func:`overfetch_size` with the configured factor and floor (4·top_k, at least 60)."""
    return overfetch_size(top_k, settings.overfetch_factor, settings.overfetch_min)


def _clamp01(x: float) -> float:
    return 0.0 if x <= 0.0 else 1.0 if x >= 1.0 else x


def dense_relevance(cosine: float | None) -> float:
    """Cosine in [−1, 1] → [0, 1] as ``max(0, cos)``; a miss counts as 0."""
    return 0.0 if cosine is None else _clamp01(cosine)


def fuse(dense: float | None, lexical: float | None, lexical_weight: float = 1.0) -> float:
    """Relevance in [0, 1]: ``max(max(0, cos), lexical_weight·lexical)``."""
    lex = 0.0 if lexical is None else _clamp01(lexical) * lexical_weight
    return max(dense_relevance(dense), _clamp01(lex))


def final_score(relevance: float, weight: float, relevance_weight: float) -> float:
    """``relevance_weight·relevance + (1 − relevance_weight)·weight``."""
    return relevance_weight * relevance + (1.0 - relevance_weight) * _clamp01(weight)


def rank(
    candidates: Iterable[Candidate],
    top_k: int,
    *,
    min_relevance: float,
    relevance_weight: float,
    lexical_weight: float = 1.0,
) -> list[Ranked]:
    """Fuse, drop relevance < min_relevance, order by score desc (ties: memory_id asc).

    A memory offered twice (once per channel) is merged: its best dense and best
    lexical score are fused together.
    """
    merged: dict[str, Candidate] = {}
    for c in candidates:
        prev = merged.get(c.memory_id)
        if prev is not None:
            c = Candidate(
                c.memory_id,
                max(prev.weight_now, c.weight_now),
                _max_opt(prev.dense, c.dense),
                _max_opt(prev.lexical, c.lexical),
            )
        merged[c.memory_id] = c
    out: list[Ranked] = []
    for c in merged.values():
        relevance = fuse(c.dense, c.lexical, lexical_weight)
        if relevance < min_relevance:
            continue
        weight = _clamp01(c.weight_now)
        out.append(
            Ranked(c.memory_id, relevance, weight, final_score(relevance, weight, relevance_weight))
        )
    out.sort(key=lambda r: (-r.score, r.memory_id))
    return out[:top_k]


def rank_with(
    candidates: Iterable[Candidate], top_k: int, settings: Settings, **overrides: float
) -> list[Ranked]:
    """:func:`rank` with ``min_relevance`` and ``rank_relevance_weight`` from settings.

    ``overrides`` may carry a per-request ``min_relevance`` (the recall body's field).
    """
    params = {
        "min_relevance": settings.min_relevance,
        "relevance_weight": settings.rank_relevance_weight,
        **overrides,
    }
    return rank(candidates, top_k, **params)


def _max_opt(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else max(a, b)
