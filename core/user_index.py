"""One user's active memories in memory: records, a vector matrix and a BM25 index.

A user holds at most 2,000 active memories (DESIGN §7), so exact cosine over a
contiguous float32 matrix answers in well under a millisecond; this is what both the
evolution step of ingest and the recall tier search. Pure data structure, no I/O: the
loader and the LRU budget live in ``sinks.hot_cache``. Not thread-safe by itself;
callers hold ``lock`` for a read or a mutation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from core.lexical import BM25Index
from schemas.enums import Status
from schemas.memory import MemoryRecord
from schemas.tenants import DEFAULT_TENANT


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
        """Rough footprint, for the cache's memory budget."""
        text = sum(len(r.content) * 2 + 400 for r in self.records.values())
        return int(self._matrix.nbytes + text * 2)

    def upsert(self, record: MemoryRecord, vector: np.ndarray | None) -> None:
        """Insert or replace; ``vector=None`` keeps the stored vector (meta-only change)."""
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
            self._matrix[self._row[mid]] = _unit(vector)
        self.records[mid] = record
        if old is not None and self.by_hash.get(old.content_hash) == mid:
            del self.by_hash[old.content_hash]
        self.by_hash[record.content_hash] = mid
        if old is None or old.content != record.content:
            self._lexical.remove(mid)
            self._lexical.add(mid, record.content)

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
        return None if row is None else self._matrix[row].copy()

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


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v
