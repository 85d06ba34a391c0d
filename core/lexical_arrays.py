"""BM25 over one user's memories, held in numpy arrays: the hot cache's lexical channel.

The same Okapi BM25 and the same normalization as :class:`core.lexical.BM25Index`
(scores agree to rounding), but the postings are three flat arrays, a term's hash, the
document's row and the term count: 13 bytes a posting, against ~100 for a dict entry,
and no Python object per document or term for the cyclic GC to walk (a cache of
hundreds of users made each full GC pass take ~340 ms). A term is kept as its
``hash()``: the arrays live in one process, where str hashes are stable, and a 64-bit
collision among a user's few thousand terms is not a practical concern.

Documents are numbered by row, as the user's matrix; the owner moves a row with
:meth:`move` when it fills a hole. Not thread-safe by itself (the owner's lock).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

import numpy as np

from core.lexical import tokenize


class Postings(NamedTuple):
    """One document's postings as held (term hashes, counts, length): what moves with a
    row to another index (``core.user_index.UserIndex.page_out``) without tokenizing."""

    hashes: np.ndarray
    tfs: np.ndarray
    length: int


class PostingArrays:
    def __init__(self, k1: float = 1.2, b: float = 0.75, capacity: int = 64) -> None:
        self.k1 = k1
        self.b = b
        self._hash = np.zeros(capacity * 8, dtype=np.int64)
        self._row = np.zeros(capacity * 8, dtype=np.int32)
        self._tf = np.zeros(capacity * 8, dtype=np.uint8)
        self._n = 0  # postings held
        self._len = np.zeros(capacity, dtype=np.int32)  # document length, by row
        self._docs = 0
        self._total = 0
        self._sorted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def nbytes(self) -> int:
        return int(self._hash.nbytes + self._row.nbytes + self._tf.nbytes + self._len.nbytes)

    def add(self, row: int, counts: Mapping[str, int]) -> None:
        """Index a document at ``row`` (which holds none) under its term counts."""
        # (lists, not arrays: numpy keeps freed small buffers in a cache of its own)
        # a term said over 255 times in one memory scores as if said 255 times (BM25
        # saturates long before: tf 255 is within 0.5 % of tf ∞ at k1 = 1.2)
        tfs = [min(255, c) for c in counts.values()]
        self._append(row, [hash(t) for t in counts], tfs, sum(counts.values()))

    def add_postings(self, row: int, p: Postings) -> None:
        """:meth:`add` of a document's held postings (another index's ``postings``)."""
        self._append(row, p.hashes, p.tfs, p.length)

    def _append(
        self, row: int, hashes: np.ndarray | list[int], tfs: np.ndarray | list[int], length: int
    ) -> None:
        if row >= self._len.shape[0]:
            self._len = _grown(self._len, row + 1)
        k = len(hashes)
        if self._n + k > self._hash.shape[0]:
            size = max(self._n + k, 2 * self._hash.shape[0])
            self._hash, self._row, self._tf = (
                _grown(a, size) for a in (self._hash, self._row, self._tf)
            )
        end = self._n + k
        self._hash[self._n : end] = hashes
        self._row[self._n : end] = row
        self._tf[self._n : end] = tfs
        self._n = end
        self._len[row] = length
        self._total += length
        self._docs += 1
        self._sorted = None

    def add_many(self, docs: list[Mapping[str, int]]) -> None:
        """Index an empty index's documents at rows 0 … len(docs) - 1 at once: what an
        :meth:`add` of each builds, in one pass of numpy calls."""
        if self._docs:
            raise ValueError("add_many needs an empty index")
        hashes = [hash(t) for counts in docs for t in counts]
        tfs = [min(255, c) for counts in docs for c in counts.values()]
        sizes = [len(counts) for counts in docs]
        lengths = [sum(counts.values()) for counts in docs]
        self._hash = np.array(hashes, dtype=np.int64)
        self._row = np.repeat(np.arange(len(docs), dtype=np.int32), sizes)
        self._tf = np.array(tfs, dtype=np.uint8)
        self._n = len(hashes)
        if len(docs) > self._len.shape[0]:
            self._len = np.zeros(len(docs), dtype=np.int32)
        self._len[: len(docs)] = lengths
        self._total = sum(lengths)
        self._docs = len(docs)
        self._sorted = None

    def remove(self, row: int) -> None:
        """Forget the document at ``row``."""
        keep = self._row[: self._n] != row
        kept = int(keep.sum())
        if kept != self._n:
            for a in (self._hash, self._row, self._tf):
                a[:kept] = a[: self._n][keep]
            self._n = kept
        self._total -= int(self._len[row])
        self._len[row] = 0
        self._docs -= 1
        self._sorted = None

    def postings(self, row: int) -> Postings:
        """The document at ``row``, as held (for :meth:`add_postings` elsewhere)."""
        at = self._row[: self._n] == row
        return Postings(self._hash[: self._n][at].copy(), self._tf[: self._n][at].copy(),
                        int(self._len[row]))  # fmt: skip

    def move(self, src: int, dst: int) -> None:
        """Renumber the document at ``src`` to ``dst`` (which holds none)."""
        self._row[: self._n][self._row[: self._n] == src] = dst
        self._len[dst] = self._len[src]
        self._len[src] = 0
        self._sorted = None

    def normalized(self, query: str | Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """Rows sharing a term with the query, and their scores in [0, 1] (raw BM25
        over the query's ideal score Σ idf(t), clamped), in row order."""
        terms = list(dict.fromkeys(tokenize(query) if isinstance(query, str) else query))
        empty = np.zeros(0, dtype=np.int64), np.zeros(0)
        if not terms or not self._docs:
            return empty
        if self._sorted is None:
            order = np.argsort(self._hash[: self._n], kind="stable")
            self._sorted = (self._hash[order], self._row[order], self._tf[order])
        hashes, rows, tfs = self._sorted
        # every query term at once (a few numpy calls in all, not a few per term: with
        # postings this short, numpy's per-call overhead is the cost)
        qh = np.array([hash(t) for t in terms], dtype=np.int64)
        lo = np.searchsorted(hashes, qh, "left")
        hi = np.searchsorted(hashes, qh, "right")
        df = hi - lo
        idf = np.log(1.0 + (self._docs - df + 0.5) / (df + 0.5))
        ideal = float(idf.sum())
        count = int(df.sum())
        if count == 0:
            return empty
        # the postings of every term, and each one's term: lo[t] .. hi[t] - 1
        term = np.repeat(np.arange(len(terms)), df)
        at = np.arange(count) - np.repeat(np.cumsum(df) - df, df) + lo[term]
        r, tf = rows[at], tfs[at].astype(np.float64)
        avgdl = self._total / self._docs or 1.0
        k1, b = self.k1, self.b
        norm = k1 * (1.0 - b + b * self._len[r] / avgdl)
        acc = np.bincount(r, weights=idf[term] * tf * (k1 + 1.0) / (tf + norm),
                          minlength=self._len.shape[0])  # fmt: skip
        hit = np.flatnonzero(acc)
        return hit, np.minimum(1.0, acc[hit] / ideal)


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(max(size, 2 * a.shape[0]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out
