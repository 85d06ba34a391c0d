"""The two channels of a hot search (dense, lexical) over one user index, and their
union over the ACTIVE and the paged-out index (``Recaller._hot``)."""

from __future__ import annotations

import numpy as np

from core.scope import RecallPredicate
from core.settings import Settings
from core.user_index import UserIndex
from memstream.schemas.memory import MemoryRecord

Channels = tuple[dict[str, float], dict[str, float]]  # dense and lexical hits


def channels(
    idx: UserIndex,
    pred: RecallPredicate,
    query: str,
    qvec: np.ndarray | None,
    limit: int,
    s: Settings,
    memo: dict[str, MemoryRecord],
    among: np.ndarray | None = None,
) -> Channels:
    """Under ``idx.lock``: the top ``limit`` of each channel among ``idx``'s rows that
    ``pred`` (and the mask ``among``) accepts."""
    # the columns decide scope and validity; only a tag filter or an as-of read leaves
    # records to test one by one
    rows, exact = idx.allowed(pred)
    if among is not None:
        rows &= among
        if not rows.any():
            return {}, {}
    keep = None if exact else pred.matches
    dense = {} if qvec is None else dict(idx.dense(qvec, limit, keep=keep, memo=memo, rows=rows))
    lexical: dict[str, float] = {}
    if s.recall_fusion != "dense":
        lexical = dict(idx.lexical(query, limit, keep=keep, memo=memo, rows=rows))
    return dense, lexical


def _channel(f: tuple[UserIndex, dict[str, float], dict[str, float]], k: int) -> dict[str, float]:
    return f[1] if k == 1 else f[2]


def top_of_both(
    found: list[tuple[UserIndex, dict[str, float], dict[str, float]]], limit: int
) -> list[tuple[UserIndex, dict[str, float], dict[str, float]]]:
    """The ACTIVE and the paged-out hits as one archive: of each channel, the top
    ``limit`` over both indexes (what one index holding both would give), so ranking
    meets no more candidates than without paged-out memories."""
    out = []
    for k in (1, 2):
        scored = sorted((v, mid) for f in found for mid, v in _channel(f, k).items())
        kept = {mid for _, mid in scored[-limit:]}
        out.append(kept)
    return [
        (
            held,
            {m: v for m, v in d.items() if m in out[0]},
            {m: v for m, v in lx.items() if m in out[1]},
        )
        for held, d, lx in found
    ]
