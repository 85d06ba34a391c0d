"""Recall ranking: over-fetch size, channel fusion, threshold, final score
(docs/architecture.md#the-recall-path).

Two stages: first *filter* on relevance
(``relevance ≥ min_relevance``), then *order* by ``final = W_rel·relevance +
(1 − W_rel)·weight`` (0.7 / 0.3 by default), "relevance and weight both normalized to
[0, 1]". Relevance must come first because a strong but unrelated memory is still
unrelated; weight only separates relevant ones ("次级区分").

The order uses relevance normalized over the memories that passed the filter: the most
relevant 1, the ``depth``-th most relevant 0 (and below it 0), one alone 1. ``depth`` is
the number of neighbours one channel fetches (``overfetch_for``, 60 for top 10), so the
scale does not depend on how many memories the *other* channel adds at the bottom: with
plain min-max over the hybrid union (up to 2 × 60 candidates), the lexical channel's
extras lowered the minimum, squeezed the relevant ones together and let weight reorder
them — on ``bench quality`` even the dense channel alone ranked worse over the union
(0.862) than over its own 60 (0.871). Calibrated relevance is
absolute (its scale is the threshold's), and among one user's memories it bunches: with
multilingual-e5 every memory that names the user sits at cosine ~0.90–0.92 for a query
that names them, i.e. relevance 0.8–1.0, so 0.3·weight (SEMANTIC 0.8 vs EPISODIC 0.6:
0.06) outweighed the relevance that told the memories apart and put a semantic memory
about anything above the episodic one that answered. Normalized, relevance spans [0, 1]
among the relevant ones and weight separates only near-ties. ``relevance`` in answers is
still the calibrated one; ``score`` is this order's value (relative to the candidates).

Relevance fuses two channels, both in [0, 1]:

* dense ``d``: the cosine calibrated for the embedding model (``core.calibration``),
  so that ``d = 0.3`` means the same for every model;
* lexical ``l``: the BM25 coverage of :meth:`core.lexical.BM25Index.normalized`
  (a query that is just a name scores 1.0 on a memory holding it).

``hybrid`` (the default, ``recall_fusion``) is the probabilistic OR of the dense channel
and the *squared* lexical one: with ``q = l²``, ``relevance = 1 − (1 − d)·(1 − q) =
d + q − d·q``. It is never below the dense channel, so a paraphrase that shares no word
keeps its dense relevance, and a full lexical match (an exact name: ``l = 1``) is
still 1 with no dense signal. Squaring discounts partial word overlap: a memory that
shares one common word of the question ("food", "job": l ≈ 0.3) gains 0.09, not 0.3 —
on ``bench quality`` the plain OR let such overlaps push paraphrase answers out of the
top 10 (measured on ``bench quality`` against ``l`` and ``l³``: README "Benchmarks").
Like the OR it rewards agreement: a memory both channels find
ranks above one that only one finds equally well.

``hybrid`` *orders* by more than that relevance: the order's value is ``RRF_SHARE`` (½)
reciprocal rank fusion of the two channels (:func:`reciprocal_ranks`, ``Σ 1/(60 +
rank)``), the rest the fused relevance, each normalized as above. Coverage is relative
to the query's length: a long query (a dialogue up to its turn, issue 32) covers ~5 %
of its words in its best memory, so ``l²`` adds ~0.003 and the relevance order is the
dense channel's alone, although BM25's order still told the answer apart. Ranks do not
depend on the query's length. Half, not all: ranks alone give a one-common-word overlap
the same vote as a dense top hit, which cost paraphrase questions (``bench quality``
generated 4×8: r@10 0.893 with ranks alone, 0.914 half and half, 0.921 relevance
alone; MADial-Bench zh r@5 0.556, 0.575, 0.473; en 0.551 half and half, 0.510 before).
The threshold stays on the relevance, which is absolute. ``dense`` and ``lexical`` use one
channel only (``l`` itself); they exist so the bench can show what each does alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from core.settings import Settings

Fusion = Literal["hybrid", "dense", "lexical"]
FUSIONS: tuple[Fusion, ...] = ("hybrid", "dense", "lexical")
RRF_SHARE = 0.5  # hybrid's order: this share from the channels' ranks, the rest relevance
RRF_K = 60  # reciprocal rank fusion's k (Cormack et al. 2009): the order of hybrid


@dataclass(frozen=True, slots=True)
class Candidate:
    """One memory offered to ranking by either channel (or both)."""

    memory_id: str
    weight_now: float  # decayed weight at query time, in [0, 1]
    dense: float | None = None  # calibrated dense relevance in [0, 1]; None: not scored
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


def fuse(dense: float | None, lexical: float | None, fusion: Fusion = "hybrid") -> float:
    """Relevance in [0, 1] of one memory; a channel that did not score it counts 0.

    ``hybrid``: ``1 − (1 − d)(1 − l²)``; ``dense``: ``d``; ``lexical``: ``l``.
    """
    d = 0.0 if dense is None else _clamp01(dense)
    lex = 0.0 if lexical is None else _clamp01(lexical)
    if fusion == "hybrid":
        q = lex * lex
        return d + q - d * q
    if fusion == "dense":
        return d
    if fusion == "lexical":
        return lex
    raise ValueError(f"unknown fusion {fusion!r}")


def final_score(relevance: float, weight: float, relevance_weight: float) -> float:
    """``relevance_weight·relevance + (1 − relevance_weight)·weight``."""
    return relevance_weight * relevance + (1.0 - relevance_weight) * _clamp01(weight)


def rank(
    candidates: Iterable[Candidate],
    top_k: int,
    *,
    min_relevance: float,
    relevance_weight: float,
    fusion: Fusion = "hybrid",
    depth: int | None = None,
) -> list[Ranked]:
    """Fuse, drop relevance < min_relevance, order by score desc (ties: memory_id asc);
    the score weighs the order's value normalized between the best kept candidate and
    the ``depth``-th best (None: the last) against weight (module docstring). The
    order's value is the relevance for one channel, the channels' reciprocal ranks
    (:func:`reciprocal_ranks`) for ``hybrid``.

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
    kept = [
        (c, r) for c in merged.values() if (r := fuse(c.dense, c.lexical, fusion)) >= min_relevance
    ]
    if not kept:
        return []
    norm = _normalized({c.memory_id: r for c, r in kept}, depth)
    if fusion == "hybrid":  # the mean of the relevance order and the channels' ranks
        rrf = _normalized(reciprocal_ranks([c for c, _ in kept]), depth)
        norm = {m: (1.0 - RRF_SHARE) * v + RRF_SHARE * rrf[m] for m, v in norm.items()}
    out: list[Ranked] = []
    for c, relevance in kept:
        weight = _clamp01(c.weight_now)
        score = final_score(norm[c.memory_id], weight, relevance_weight)
        out.append(Ranked(c.memory_id, relevance, weight, score))
    out.sort(key=lambda r: (-r.score, r.memory_id))
    return out[:top_k]


def _normalized(values: dict[str, float], depth: int | None) -> dict[str, float]:
    """Each value scaled between the best (1) and the ``depth``-th best (0, and 0 below
    it; None: the last); all 1 when those two are equal."""
    by_value = sorted(values.values(), reverse=True)
    hi = by_value[0]
    lo = by_value[-1 if depth is None else min(depth, len(by_value)) - 1]
    if hi - lo < 1e-12:
        return dict.fromkeys(values, 1.0)
    return {m: max(0.0, (v - lo) / (hi - lo)) for m, v in values.items()}


def reciprocal_ranks(candidates: Sequence[Candidate], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion of the two channels over ``candidates``: per memory
    ``Σ 1 / (k + rank)`` over the channels that scored it above 0, the rank counted
    from 1 among the candidates by that channel's score, equal scores sharing the best
    rank (so a tie of the lexical channel — one shared word — favours nobody)."""
    out = dict.fromkeys((c.memory_id for c in candidates), 0.0)
    for channel in ("dense", "lexical"):
        scored = [(c.memory_id, v) for c in candidates if (v := getattr(c, channel))]
        scored.sort(key=lambda mv: -mv[1])
        rank, last = 0, None
        for n, (mid, v) in enumerate(scored, start=1):
            if v != last:
                rank, last = n, v
            out[mid] += 1.0 / (k + rank)
    return out


def rank_with(
    candidates: Iterable[Candidate],
    top_k: int,
    settings: Settings,
    *,
    min_relevance: float | None = None,
) -> list[Ranked]:
    """:func:`rank` with ``min_relevance``, ``rank_relevance_weight`` and ``recall_fusion``
    from settings, normalized to the depth one channel fetches (``overfetch_for``).

    ``min_relevance`` is a per-request one (the recall body's field), else the setting's.
    """
    return rank(
        candidates,
        top_k,
        min_relevance=settings.min_relevance if min_relevance is None else min_relevance,
        relevance_weight=settings.rank_relevance_weight,
        fusion=settings.recall_fusion,
        depth=overfetch_for(top_k, settings),
    )


def _max_opt(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


def within_budget(contents: Sequence[str], max_chars: int) -> tuple[list[int], int]:
    """Which of ``contents`` (best first) fit whole into ``max_chars`` characters, and
    the characters they use: walked in rank order, a memory that no longer fits is left
    out and the next, shorter one may still fit (the agent's context budget, recall's
    ``max_chars``). Characters are Unicode code points (``len``), CJK and Latin alike."""
    kept, used = [], 0
    for i, text in enumerate(contents):
        if used + len(text) <= max_chars:
            kept.append(i)
            used += len(text)
    return kept, used
