"""Which memories of one group belong together: links, scores, bounded greedy clusters.

The planning half of consolidation (:mod:`core.consolidation` says who may merge and
what a merge yields). Two items of a group are *linked* when any of:

- their cosine, rescaled above the group's background ``rel = (cos − μ) / (1 − μ)``
  (μ = the group's mean pairwise cosine: one threshold then serves models whose cosines
  live in different ranges, MiniLM's 0.1–0.7 as well as e5's 0.75–0.9), reaches the
  similarity setting;
- they come from the same source session (turns of one conversation);
- they share a *rare specific*: a name, number or date (:mod:`core.sameness`) that at
  most max(2, 5 %) of the group mention (a name found everywhere, such as the speaker's,
  ties nothing together).

Linked pairs score ``rel + 0.3·same session + 0.3·shared specific − 0.5·max weight`` (so
low weights merge first) and are joined greedily, best pair first (single linkage with
union-find), while a cluster stays within ``max_size`` *sources* (a memory that is
itself a merge counts all of its own, so re-merging cannot grow a blob without end) and
``max_chars`` of joined text; it stops as soon as the clusters free ``need`` slots (k
items free k − 1). Clusters smaller than ``min_size`` are dropped. Ties go by index, so
the same inputs always give the same clusters. Pure numpy, no I/O.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.sameness import specifics

SESSION_BONUS = 0.3
SPECIFIC_BONUS = 0.3
WEIGHT_PENALTY = 0.5
RARE_SHARE = 0.05
JOIN_OVERHEAD = 2  # len("; ")


@dataclass(frozen=True, slots=True)
class Edges:
    """Linked pairs (a < b, global indices) with their scores."""

    score: np.ndarray
    a: np.ndarray
    b: np.ndarray

    @staticmethod
    def concat(parts: Sequence[Edges]) -> Edges:
        if not parts:
            empty = np.zeros(0)
            return Edges(empty, empty.astype(int), empty.astype(int))
        return Edges(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("score", "a", "b")))


def group_edges(
    index: Sequence[int],
    unit: np.ndarray,
    sessions: Sequence[str | None],
    texts: Sequence[str],
    weights: np.ndarray,
    similarity: float,
) -> Edges:
    """Linked pairs of one group; ``index`` maps its rows (unit, sessions, …) to global ids."""
    g = np.asarray(index)
    m = len(g)
    if m < 2:
        return Edges.concat([])
    iu, ju = np.triu_indices(m, 1)
    cos = (unit @ unit.T)[iu, ju]
    mu = float(np.clip(cos.mean(), 0.0, 0.95))
    rel = (cos - mu) / (1.0 - mu)
    codes = {v: n for n, v in enumerate(sorted({x for x in sessions if x}))}
    code = np.array([codes[x] if x else -1 - n for n, x in enumerate(sessions)])
    same = code[iu] == code[ju]
    shared = np.zeros(len(iu), dtype=bool)
    for rows in rare_specifics(texts):
        for x, first in enumerate(rows):
            for y in rows[x + 1 :]:
                shared[first * m - first * (first + 1) // 2 + (y - first - 1)] = True
    link = (rel >= similarity) | same | shared
    w = np.asarray(weights, dtype=np.float64)
    score = (
        rel
        + SESSION_BONUS * same
        + SPECIFIC_BONUS * shared
        - WEIGHT_PENALTY * np.maximum(w[iu], w[ju])
    )
    return Edges(score[link], g[iu[link]], g[ju[link]])


def rare_specifics(texts: Sequence[str]) -> list[list[int]]:
    """For each specific that 2..cutoff texts mention: their positions, ascending."""
    seen: dict[str, list[int]] = defaultdict(list)
    for n, text in enumerate(texts):
        for token in _specifics(text):
            seen[token].append(n)
    cutoff = max(2, math.ceil(RARE_SHARE * len(texts)))
    return [rows for _, rows in sorted(seen.items()) if 2 <= len(rows) <= cutoff]


def greedy_clusters(
    nodes: Sequence[int],
    sources: dict[int, int],
    chars: dict[int, int],
    edges: Edges,
    need: int,
    *,
    min_size: int,
    max_size: int,
    max_chars: int,
) -> list[list[int]]:
    """Clusters of ``nodes`` (ascending) that free ``need`` slots, or what links allow.

    A cluster has at least ``min_size`` nodes, at most ``max_size`` sources (a node that
    is itself a merge brings all of its own) and ``max_chars`` of joined text.
    """
    parent = {i: i for i in nodes}
    size = dict.fromkeys(nodes, 1)
    weight = dict(sources)
    length = dict(chars)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def frees(k: int) -> int:
        return k - 1 if k >= min_size else 0

    freed = 0
    for e in np.lexsort((edges.b, edges.a, -edges.score)):
        if freed >= need:
            break
        ra, rb = find(int(edges.a[e])), find(int(edges.b[e]))
        joined = length[ra] + length[rb] + JOIN_OVERHEAD
        if ra == rb or weight[ra] + weight[rb] > max_size or joined > max_chars:
            continue
        freed += frees(size[ra] + size[rb]) - frees(size[ra]) - frees(size[rb])
        parent[rb] = ra
        size[ra], weight[ra], length[ra] = size[ra] + size[rb], weight[ra] + weight[rb], joined
    clusters: dict[int, list[int]] = defaultdict(list)
    for i in nodes:
        clusters[find(i)].append(i)
    return sorted((sorted(c) for c in clusters.values() if len(c) >= min_size), key=lambda c: c[0])


def unit_rows(v: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


@functools.lru_cache(maxsize=16384)
def _specifics(text: str) -> frozenset[str]:
    return specifics(text)
