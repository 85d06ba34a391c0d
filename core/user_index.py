"""One user's active memories in memory: records, a vector matrix and a BM25 index.

A user holds at most 2,000 active memories (DESIGN §7), so exact cosine over a
contiguous float32 matrix answers in well under a millisecond; this is what both the
evolution step of ingest and the recall tier search. Each row is the unit vector rounded
to float16 precision (a cosine moves by ~1e-3 at most, far below any threshold's step)
and kept as float32: a user built from the embedder, from the stores or from a Redis
snapshot (``sinks.user_snapshot``, which stores the float16 rows) then holds the very
same rows and ranks the same. Kept as float32 because numpy has no BLAS for float16:
``float16 @ float32`` measured 3.7 ms for 2,000 rows (45 µs in float32), a cast first
1.3 ms. Pure data structure, no I/O: the
loader and the LRU budget live in ``sinks.hot_cache``. Not thread-safe by itself;
callers hold ``lock`` for a read or a mutation.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import numpy as np

from core.lexical import BM25Index
from schemas.enums import Status
from schemas.memory import MemoryRecord
from schemas.tenants import DEFAULT_TENANT

# Per memory, besides the matrix row and the text: the MemoryRecord (slots, ids,
# datetimes, tags), the records / by_hash / row dict entries and the BM25 postings.
# Measured with tracemalloc over 200 mixed English / Chinese memories of ~50 characters:
# 4.3 KB a memory in all, 1.5 KB of it the float32 row, so ~2.65 KB besides the text.
RECORD_BYTES = 2650


class UserIndex:
    def __init__(self, user_id: int, dim: int, capacity: int = 64, tenant: str = DEFAULT_TENANT):
        self.user_id = user_id
        self.tenant_id = tenant
        self.dim = dim
        self.lock = threading.RLock()
        self.records: dict[str, MemoryRecord] = {}
        self.by_hash: dict[str, str] = {}  # content_hash -> memory_id, for exact dedup
        # content_hash -> memory_id of ARCHIVED memories: a fact said again is restored,
        # not stored twice (DESIGN §7 "against stored hashes"). Hashes only, no records.
        self.dormant: dict[str, str] = {}
        self._ids: list[str] = []
        self._row: dict[str, int] = {}
        self._matrix = np.zeros((capacity, dim), dtype=np.float32)
        self._lexical = BM25Index()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, memory_id: str) -> bool:
        return memory_id in self.records

    @property
    def nbytes(self) -> int:
        """Footprint for the cache's memory budget: the matrix, plus per memory what
        ``tracemalloc`` measured for the record, its dict entries and its BM25 postings
        (``RECORD_BYTES``), plus its text (2 bytes a character: Chinese text is UCS-2)."""
        text = sum(len(r.content) for r in self.records.values())
        return int(self._matrix.nbytes + RECORD_BYTES * len(self.records) + 2 * text)

    def upsert(
        self,
        record: MemoryRecord,
        vector: np.ndarray | None,
        terms: dict[str, int] | None = None,
    ) -> None:
        """Insert or replace; ``vector=None`` keeps the stored vector (meta-only change);
        ``terms``: the content's term counts when known (a snapshot holds them), so the
        content is not tokenized again (jieba and the stemmer: ~30 µs a memory)."""
        mid = record.memory_id
        old = self.records.get(mid)
        if mid not in self._row:
            if vector is None:
                return  # a meta change for a memory whose vector we never had
            if len(self._ids) == self._matrix.shape[0]:
                grown = np.zeros((self._matrix.shape[0] * 2, self.dim), dtype=np.float32)
                grown[: len(self._ids)] = self._matrix[: len(self._ids)]
                self._matrix = grown
            self._row[mid] = len(self._ids)
            self._ids.append(mid)
        if vector is not None:
            self._matrix[self._row[mid]] = half(vector)
        self.records[mid] = record
        if old is not None and self.by_hash.get(old.content_hash) == mid:
            del self.by_hash[old.content_hash]
        self.by_hash[record.content_hash] = mid
        if old is None or old.content != record.content:
            if terms is None:
                self._lexical.add(mid, record.content)
            else:
                self._lexical.add_tokens(mid, Counter(terms).elements())

    def note_status(self, record: MemoryRecord) -> None:
        """Keep ``dormant`` in step with a record that left or (re)entered ARCHIVED."""
        if record.status is Status.ARCHIVED:
            self.dormant[record.content_hash] = record.memory_id
        elif self.dormant.get(record.content_hash) == record.memory_id:
            del self.dormant[record.content_hash]

    def forget_dormant(self, memory_id: str) -> None:
        """A purged memory is no longer there to restore."""
        for h in [h for h, mid in self.dormant.items() if mid == memory_id]:
            del self.dormant[h]

    def remove(self, memory_id: str) -> None:
        row = self._row.pop(memory_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        if row != last:  # move the last row into the hole
            moved = self._ids[last]
            self._matrix[row] = self._matrix[last]
            self._ids[row] = moved
            self._row[moved] = row
        self._ids.pop()
        old = self.records.pop(memory_id, None)
        if old is not None and self.by_hash.get(old.content_hash) == memory_id:
            del self.by_hash[old.content_hash]
        self._lexical.remove(memory_id)

    def vector(self, memory_id: str) -> np.ndarray | None:
        row = self._row.get(memory_id)
        return None if row is None else self._matrix[row].astype(np.float32)

    def terms(self, memory_id: str) -> dict[str, int]:
        """The term counts the lexical channel indexes ``memory_id`` under."""
        return self._lexical.terms(memory_id)

    def rows(self) -> tuple[list[str], np.ndarray]:
        """Memory ids and their rows as float16 (exact: the rows are float16-rounded),
        in row order (for a snapshot)."""
        n = len(self._ids)
        return list(self._ids), self._matrix[:n].astype(np.float16)

    def dense(
        self, query: np.ndarray, limit: int, keep: Callable[[MemoryRecord], bool] | None = None
    ) -> list[tuple[str, float]]:
        """Top ``limit`` (memory_id, cosine) among records that ``keep`` accepts."""
        n = len(self._ids)
        if n == 0 or limit <= 0:
            return []
        scores = self._matrix[:n] @ _unit(query)
        order = np.argsort(-scores, kind="stable")
        out: list[tuple[str, float]] = []
        for i in order:
            mid = self._ids[i]
            if keep is None or keep(self.records[mid]):
                out.append((mid, float(scores[i])))
                if len(out) == limit:
                    break
        return out

    def lexical(
        self, query: str, limit: int, keep: Callable[[MemoryRecord], bool] | None = None
    ) -> list[tuple[str, float]]:
        """Top ``limit`` (memory_id, BM25 normalized to [0, 1]) among accepted records."""
        scored = sorted(self._lexical.normalized(query).items(), key=lambda kv: -kv[1])
        out = []
        for mid, score in scored:
            rec = self.records.get(mid)
            if rec is not None and (keep is None or keep(rec)):
                out.append((mid, score))
                if len(out) == limit:
                    break
        return out

    def cosine(self, query: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
        q = _unit(query)
        return {m: float(self._matrix[self._row[m]] @ q) for m in memory_ids if m in self._row}


def half(v: np.ndarray) -> np.ndarray:
    """The unit vector of ``v`` rounded to float16 precision, as float32 (a matrix row)."""
    return _unit(v).astype(np.float16).astype(np.float32)


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v
