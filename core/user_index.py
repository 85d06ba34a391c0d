"""One user's active memories in memory: compact records, an int8 vector matrix and BM25
postings in arrays.

A user holds at most 2,000 active memories (DESIGN §7), so exact cosine over a
contiguous matrix answers in well under a millisecond; this is what both the evolution
step of ingest and the recall tier search. The cache holds hundreds of users, so the
layout is what a memory costs (issue 13 asked for ≤ 1 KB; ``RECORD_BYTES``):

- **rows**: the unit vector rounded to float16 precision (``half``), then quantized to
  int8 with one scale per row (``quantize``): 384 bytes for 384 dimensions, against
  1,536 as float32. The cosine is ``(q · query) / |q|``; against the float16 row it
  moves by ~3e-4 on average and 1.4e-3 at most (400k pairs of 384-dimension vectors),
  below any threshold's step. Quantizing is a function of the float16 row,
  so a user built from the embedder, from the stores or from a Redis snapshot
  (``sinks.user_snapshot``, which stores these int8 rows) holds the same rows and ranks
  the same. The matrix is cast to float32 per query (BLAS has no int8 ``gemv``; the
  cast of 2,000 rows takes ~0.3 ms);
- **records**: each one as its ``core.record_codec`` bytes, decoded when looked at
  (``records[mid]``, ~7 µs); recall decodes only its candidates;
- **lexical**: ``core.lexical_arrays.PostingArrays``;
- per row, the few fields that whole-user walks need without decoding: the content
  hash's first 8 bytes (exact dedup, confirmed on the decoded record), the level, the
  app and the importance (capacity counters, ``scopes``).

No Python object per memory besides its id and its bytes, so the cyclic GC has nothing
to walk (a cache of dataclass records made each full pass take ~340 ms, which timed out
every recall in flight). Pure data structure, no I/O: the loader and the LRU budget live
in ``sinks.hot_cache``. Not thread-safe by itself; callers hold ``lock`` for a read or a
mutation.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from core import record_codec
from core.lexical import term_counts
from core.lexical_arrays import PostingArrays
from schemas.enums import Level, Status
from schemas.memory import MemoryRecord
from schemas.tenants import DEFAULT_TENANT

# Per memory, besides the arrays (int8 row, columns, postings: ``nbytes`` counts them as
# allocated) and the record's bytes: the id string, its list slot and dict entry and the
# bytes object's header. tracemalloc over 5 users × 200 mixed English / Chinese memories
# of ~30 characters: 945 bytes a memory in all (508 of arrays, 330 of record bytes, 106
# of the rest), against 4.3 KB with dataclass records, float32 rows and dict postings;
# the test_user_index budget test holds the estimate to the measurement.
RECORD_BYTES = 125  # with ~15 bytes of margin: the budget is a bound

_LEVELS = list(Level)
_LEVEL_CODE = {lv: i for i, lv in enumerate(_LEVELS)}
_P_ID, _P_HASH = record_codec.POS["memory_id"], record_codec.POS["content_hash"]
_P_LEVEL, _P_APP = record_codec.POS["level"], record_codec.POS["app_id"]
_P_IMP, _P_CONTENT = record_codec.POS["is_important"], record_codec.POS["content"]

Decoded = dict[str, MemoryRecord]  # a caller's memo: what one read decoded already


class UserIndex:
    def __init__(self, user_id: int, dim: int, capacity: int = 64, tenant: str = DEFAULT_TENANT):
        self.user_id = user_id
        self.tenant_id = tenant
        self.dim = dim
        self.lock = threading.RLock()
        # content_hash -> memory_id of ARCHIVED memories: a fact said again is restored,
        # not stored twice (DESIGN §7 "against stored hashes"). Hashes only, no records.
        self.dormant: dict[str, str] = {}
        self._ids: list[str] = []
        self._row: dict[str, int] = {}
        self._blobs: list[bytes] = []
        self._blob_bytes = 0
        self._q = np.zeros((capacity, dim), dtype=np.int8)
        self._inv = np.zeros(capacity, dtype=np.float32)  # 1 / |q| per row
        self._hash = np.zeros(capacity, dtype=np.uint64)  # content hash prefix
        self._level = np.zeros(capacity, dtype=np.uint8)
        self._important = np.zeros(capacity, dtype=np.bool_)
        self._app = np.zeros(capacity, dtype=np.int16)  # index into _apps
        self._apps: list[str | None] = [None]
        self._lexical = PostingArrays(capacity=capacity)
        self.records = Records(self)
        self.by_hash = ByHash(self)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, memory_id: str) -> bool:
        return memory_id in self._row

    @property
    def nbytes(self) -> int:
        """Footprint for the cache's memory budget: the arrays (matrix, columns,
        postings), each record's bytes, and ``RECORD_BYTES`` a memory for the rest."""
        arrays = self._q.nbytes + self._inv.nbytes + self._hash.nbytes + self._level.nbytes
        arrays += self._important.nbytes + self._app.nbytes + self._lexical.nbytes
        return int(arrays + self._blob_bytes + RECORD_BYTES * len(self._ids))

    # ------------------------------------------------------------ writes
    def upsert(
        self,
        record: MemoryRecord,
        vector: np.ndarray | None,
        terms: Mapping[str, int] | None = None,
    ) -> None:
        """Insert or replace; ``vector=None`` keeps the stored vector (meta-only change);
        ``terms``: the content's term counts when known, so the content is not tokenized
        again (jieba and the stemmer: ~30 µs a memory)."""
        row = None if vector is None else quantize(vector)
        self.put(record_codec.encode(record), record_codec.values(record), row, terms)

    def put(
        self,
        blob: bytes,
        vals: list[Any],
        row: tuple[np.ndarray, float] | None,
        terms: Mapping[str, int] | None = None,
    ) -> None:
        """:meth:`upsert` of an encoded record (``blob``, its parsed ``vals``) and its
        quantized ``row`` (``quantize``; None keeps the held one): how a snapshot loads
        without building a MemoryRecord."""
        mid = vals[_P_ID]
        i = self._row.get(mid)
        changed = True
        if i is None:
            if row is None:
                return  # a meta change for a memory whose vector we never had
            i = len(self._ids)
            if i == self._q.shape[0]:
                self._grow()
            self._row[mid] = i
            self._ids.append(mid)
            self._blobs.append(blob)
        else:
            old = self._blobs[i]
            changed = record_codec.parse(old)[_P_CONTENT] != vals[_P_CONTENT]
            self._blob_bytes -= len(old)
            self._blobs[i] = blob
            if changed:
                self._lexical.remove(i)
        self._blob_bytes += len(blob)
        if row is not None:
            self._q[i], self._inv[i] = row
        self._hash[i] = _hash_prefix(vals[_P_HASH])
        self._level[i] = _LEVEL_CODE[Level(vals[_P_LEVEL])]
        self._important[i] = bool(vals[_P_IMP])
        self._app[i] = self._app_code(vals[_P_APP])
        if changed:
            counts = terms if terms is not None else term_counts(vals[_P_CONTENT])
            self._lexical.add(i, counts)

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
        i = self._row.pop(memory_id, None)
        if i is None:
            return
        self._lexical.remove(i)
        self._blob_bytes -= len(self._blobs[i])
        last = len(self._ids) - 1
        if i != last:  # move the last row into the hole
            moved = self._ids[last]
            self._ids[i], self._blobs[i] = moved, self._blobs[last]
            for a in (self._q, self._inv, self._hash, self._level, self._important, self._app):
                a[i] = a[last]
            self._row[moved] = i
            self._lexical.move(last, i)
        self._ids.pop()
        self._blobs.pop()

    # ------------------------------------------------------------ reads
    def record(self, memory_id: str, memo: Decoded | None = None) -> MemoryRecord | None:
        """The held record, decoded (None when not held). With ``memo`` (a reader: one
        recall), what it decoded is kept there, so a candidate met by both channels is
        decoded once, and the record comes from ``shared_decode``: do not change it."""
        if memo is not None and (rec := memo.get(memory_id)) is not None:
            return rec
        i = self._row.get(memory_id)
        if i is None:
            return None
        if memo is None:
            return record_codec.decode(self._blobs[i])
        rec = memo[memory_id] = shared_decode(self._blobs[i])
        return rec

    def scopes(self) -> Iterator[tuple[Level, str | None, bool]]:
        """(level, app_id, is_important) of every held memory, without decoding."""
        apps = self._apps
        n = len(self._ids)
        for lv, app, imp in zip(self._level[:n], self._app[:n], self._important[:n], strict=True):
            yield _LEVELS[lv], apps[app], bool(imp)

    def vector(self, memory_id: str) -> np.ndarray | None:
        """The held row as a float32 unit vector (the int8 row, dequantized)."""
        i = self._row.get(memory_id)
        return None if i is None else self._q[i].astype(np.float32) * self._inv[i]

    def terms(self, memory_id: str) -> dict[str, int]:
        """The term counts the lexical channel indexes ``memory_id`` under (its content,
        tokenized: the postings keep only the terms' hashes)."""
        rec = self.record(memory_id)
        return {} if rec is None else dict(term_counts(rec.content))

    def encoded(self) -> list[tuple[bytes, bytes]]:
        """Every held memory as (record bytes, row bytes: ``row_bytes``), in row order
        (for a snapshot)."""
        return [
            (self._blobs[i], row_bytes(self._q[i], float(self._inv[i])))
            for i in range(len(self._ids))
        ]

    def dense(
        self,
        query: np.ndarray,
        limit: int,
        keep: Callable[[MemoryRecord], bool] | None = None,
        memo: Decoded | None = None,
    ) -> list[tuple[str, float]]:
        """Top ``limit`` (memory_id, cosine) among records that ``keep`` accepts."""
        n = len(self._ids)
        if n == 0 or limit <= 0:
            return []
        scores = (self._q[:n].astype(np.float32) @ _unit(query)) * self._inv[:n]
        order = np.argsort(-scores, kind="stable").tolist()
        out: list[tuple[str, float]] = []
        memo = {} if memo is None and keep is not None else memo
        for i in order:
            mid = self._ids[i]
            if keep is None or keep(self.record(mid, memo)):  # type: ignore[arg-type]
                out.append((mid, float(scores[i])))
                if len(out) == limit:
                    break
        return out

    def lexical(
        self,
        query: str,
        limit: int,
        keep: Callable[[MemoryRecord], bool] | None = None,
        memo: Decoded | None = None,
    ) -> list[tuple[str, float]]:
        """Top ``limit`` (memory_id, BM25 normalized to [0, 1]) among accepted records."""
        rows, scores = self._lexical.normalized(query)
        out: list[tuple[str, float]] = []
        memo = {} if memo is None and keep is not None else memo
        rows = rows.tolist()
        for j in np.argsort(-scores, kind="stable").tolist():
            mid = self._ids[rows[j]]
            if keep is None or keep(self.record(mid, memo)):  # type: ignore[arg-type]
                out.append((mid, float(scores[j])))
                if len(out) == limit:
                    break
        return out

    def cosine(self, query: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
        q = _unit(query)
        out = {}
        for m in memory_ids:
            i = self._row.get(m)
            if i is not None:
                out[m] = float(self._q[i].astype(np.float32) @ q) * float(self._inv[i])
        return out

    # ------------------------------------------------------------ internals
    def _grow(self) -> None:
        size = 2 * self._q.shape[0]
        q = np.zeros((size, self.dim), dtype=np.int8)
        q[: self._q.shape[0]] = self._q
        self._q = q
        for name in ("_inv", "_hash", "_level", "_important", "_app"):
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def _app_code(self, app_id: str | None) -> int:
        try:
            return self._apps.index(app_id or None)
        except ValueError:
            self._apps.append(app_id)
            return len(self._apps) - 1


class Records(Mapping[str, MemoryRecord]):
    """``idx.records``: the held records by id, each decoded when looked up (a walk over
    all of them decodes all of them: ~7 µs a memory)."""

    def __init__(self, idx: UserIndex):
        self._idx = idx

    def __getitem__(self, memory_id: str) -> MemoryRecord:
        rec = self._idx.record(memory_id)
        if rec is None:
            raise KeyError(memory_id)
        return rec

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._idx._ids))

    def __len__(self) -> int:
        return len(self._idx._ids)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._idx._row


class ByHash:
    """``idx.by_hash.get(content_hash)``: the held memory with exactly that content."""

    def __init__(self, idx: UserIndex):
        self._idx = idx

    def get(self, content_hash: str, default: str | None = None) -> str | None:
        idx = self._idx
        n = len(idx._ids)
        for i in np.flatnonzero(idx._hash[:n] == _hash_prefix(content_hash)):
            vals = record_codec.parse(idx._blobs[i])
            if vals[_P_HASH] == content_hash:
                return vals[_P_ID]
        return default


@functools.lru_cache(maxsize=4096)
def shared_decode(blob: bytes) -> MemoryRecord:
    """``record_codec.decode`` for readers, remembered for the last 4,096 records read: a
    user's next recalls (sessions, popular users) meet the same candidates again. Keyed
    by the bytes themselves (their hash is computed once per object), so a changed
    record, which is new bytes, is never answered from an old entry. ~12 MB at most,
    outside the cache budget. The records are shared: readers must not change them."""
    return record_codec.decode(blob)


def half(v: np.ndarray) -> np.ndarray:
    """The unit vector of ``v`` rounded to float16 precision, as float32."""
    return _unit(v).astype(np.float16).astype(np.float32)


def quantize(v: np.ndarray) -> tuple[np.ndarray, float]:
    """The int8 row of ``v`` (its float16-rounded unit vector over one scale, max |x| →
    127) and 1 / |row|, the factor that makes its dot product a cosine."""
    h = half(v)
    peak = float(np.abs(h).max())
    if peak == 0.0:
        return np.zeros(h.shape, dtype=np.int8), 0.0
    q = np.clip(np.rint(h * (127.0 / peak)), -127, 127).astype(np.int8)
    norm = float(np.sqrt(np.dot(q.astype(np.float64), q.astype(np.float64))))
    return q, float(np.float32(1.0 / norm))


def row_bytes(q: np.ndarray, inv: float) -> bytes:
    """A quantized row as stored in a snapshot: the int8 values, then 1/|q| as float32."""
    return q.tobytes() + np.float32(inv).tobytes()


def row_from_bytes(data: bytes, dim: int) -> tuple[np.ndarray, float]:
    """The quantized row of ``row_bytes`` output, or of a float16 row (older snapshots)."""
    if len(data) == dim + 4:
        return np.frombuffer(data[:dim], dtype=np.int8).copy(), float(
            np.frombuffer(data[dim:], dtype=np.float32)[0]
        )
    if len(data) == 2 * dim:
        return quantize(np.frombuffer(data, dtype=np.float16).astype(np.float32))
    raise ValueError("snapshot row of another dimension")


def _hash_prefix(content_hash: str) -> int:
    try:
        return int(content_hash[:16], 16)
    except ValueError:  # not hex: any stable 64 bits will do, the full hash confirms
        return hash(content_hash) & 0xFFFFFFFFFFFFFFFF


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v
