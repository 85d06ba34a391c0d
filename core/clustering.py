"""Which memories of one group merge: candidate groups by shape, chosen greedily.

The planning half of consolidation (:mod:`core.consolidation` says who may merge at
all, :mod:`core.compression` which texts may become one and into what). Candidates are
the texts sharing a duplicate key (the same fact repeated) or a frame key (the same
frame with other values): one dictionary pass over cached shapes, no pairwise cosine,
so a scope with nothing to merge costs a few microseconds per memory and eviction
follows at once.

Candidates are taken greedily: the ones that free the most first (k members free
k − 1), then the lowest top weight, then the earliest member; each takes its members
not yet taken, the fewest-sourced first, as many as keep the merge within
``max_sources`` source turns (a member that is itself a merge brings all of its own) and a compressed text
within ``max_chars`` (:func:`core.compression.merged_text`). It stops as soon as the
merges free ``need`` slots. Ties go by index, so the same inputs give the same merges.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.compression import merged_text, shape


@dataclass(frozen=True, slots=True)
class Merge:
    members: tuple[int, ...]  # indices given, in the order given (time order)
    text: str
    kind: str  # compression.SAME | compression.FRAME


def candidates(texts: Sequence[str]) -> list[list[int]]:
    """Index lists (ascending, ≥ 2) of texts sharing a duplicate or a frame key."""
    keyed: dict[tuple[object, ...], list[int]] = defaultdict(list)
    for n, text in enumerate(texts):
        s = shape(text)
        keyed[("same", s.same_key)].append(n)
        for key in s.frames:
            keyed[("frame", key)].append(n)
    unique = {tuple(v) for v in keyed.values() if len(v) > 1}
    return sorted((list(v) for v in unique), key=lambda v: (v[0], len(v)))


def any_candidates(texts: Iterable[str]) -> bool:
    """Whether two of ``texts`` share a duplicate or a frame key: when none do, no subset
    of them has a :func:`candidates` group, and a plan over them merges nothing."""
    seen: set[tuple[object, ...]] = set()
    for text in texts:
        s = shape(text)
        for key in (("same", s.same_key), *(("frame", k) for k in s.frames)):
            if key in seen:
                return True
            seen.add(key)
    return False


def choose(
    texts: Sequence[str],
    sources: Sequence[int],
    weights: Sequence[float],
    need: int,
    *,
    min_size: int,
    max_sources: int,
    max_chars: int,
) -> list[Merge]:
    """Merges among ``texts`` (time order) that free ``need`` slots, or what they can."""
    ranked = sorted(candidates(texts), key=lambda c: (-len(c), max(weights[i] for i in c), c[0]))
    taken: set[int] = set()
    out: list[Merge] = []
    freed = 0
    for cand in ranked:
        while freed < need:  # a candidate over the source bound makes several merges
            free = [i for i in cand if i not in taken]
            merge = _largest(free, texts, sources, min_size, max_sources, max_chars)
            if merge is None:
                break
            taken.update(merge.members)
            out.append(merge)
            freed += len(merge.members) - 1
    return sorted(out, key=lambda m: m.members)


def _largest(
    free: list[int],
    texts: Sequence[str],
    sources: Sequence[int],
    min_size: int,
    max_sources: int,
    max_chars: int,
) -> Merge | None:
    """The most members of ``free`` that merge within both bounds: those with the fewest
    sources first (a merge grows no blob while bare memories wait), in time order."""
    fits, total = [], 0
    for i in sorted(free, key=lambda i: (sources[i], i)):
        if total + sources[i] <= max_sources:
            fits.append(i)
            total += sources[i]
    fits.sort()
    while len(fits) >= max(2, min_size):
        made = merged_text([texts[i] for i in fits], max_chars)
        if made:
            return Merge(tuple(fits), *made)
        fits.pop()
    return None
