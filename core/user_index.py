"""One user's active memories in memory: compact records, an int8 vector matrix and BM25
postings in arrays.

A user holds at most 2,000 active memories (DESIGN §7), so exact cosine over a
contiguous matrix answers in well under a millisecond; this is what both the evolution
step of ingest and the recall tier search. The cache holds hundreds of users, so the
layout is what a memory costs (issue 13 asked for ≤ 1 KB; ``RECORD_BYTES``):

- **rows**: int8 vectors with one scale per row (``core.vector_rows``: 384 bytes for
  384 dimensions), cast to float32 per query (BLAS has no int8 ``gemv``; ~0.3 ms for
  2,000 rows);
- **records**: each one as its ``core.record_codec`` bytes, decoded when looked at
  (``records[mid]``, ~7 µs); recall decodes only its candidates;
- **lexical**: ``core.lexical_arrays.PostingArrays``;
- per row, the few fields that whole-user walks need without decoding: the content
  hash's first 8 bytes (exact dedup, confirmed on the decoded record), the level, the
  app and the importance (capacity counters, ``scopes``).

Paged-out memories (``core.capacity.paged_out``: ARCHIVED by the capacity, still worth
keeping) live in a second index of the same class, ``paged``, created on the first one:
everything that reads the user's index as "the ACTIVE memories" (capacity counters,
eviction, consolidation, evolution, dedup) never sees them; default recall searches
both (``paged_rows`` applies the rule at read time). ``page_out`` moves a row there with
its int8 vector and postings, ``remove`` forgets a memory in either.

No Python object per memory besides its id and its bytes, so the cyclic GC has nothing
to walk (a cache of dataclass records made each full pass take ~340 ms, which timed out
every recall in flight). Pure data structure, no I/O: the loader and the LRU budget live
in ``sinks.hot_cache``. Not thread-safe by itself; callers hold ``lock`` for a read or a
mutation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from core import index_search, record_codec
from core.calibration import latin_share
from core.capacity import EvictionCandidate
from core.index_search import Scoped
from core.index_views import CODES, ByHash, Fact, Records, hash_prefix, shared_decode
from core.lexical import term_counts
from core.lexical_arrays import PostingArrays, Postings
from core.settings import Settings
from core.vector_rows import quantize, row_bytes, unit
from core.weights import is_persona, weight_at_us
from schemas.enums import Level, MemType, Ownership, Status
from schemas.memory import MemoryRecord
from schemas.tenants import DEFAULT_TENANT

# Per memory, besides the arrays (int8 row, columns, postings: ``nbytes`` counts them as
# allocated) and the record's bytes: the id string, its list slot and dict entry and the
# bytes object's header. tracemalloc over 5 users × 200 mixed English / Chinese memories
# of ~30 characters: 945 bytes a memory in all (508 of arrays, 330 of record bytes, 106
# of the rest), against 4.3 KB with dataclass records, float32 rows and dict postings;
# the test_user_index budget test holds the estimate to the measurement.
RECORD_BYTES = 125  # with ~15 bytes of margin: the budget is a bound
# Per index, whatever its size: the object and its attribute dict, the arrays' headers,
# its lock and helper objects (~1.4 KB more once the ``_expire`` column and ``paged``
# came: the dict past a resize), with margin.
INDEX_BYTES = 2048

_LEVELS = list(Level)
# column codes of the enums, by member and by the value a parsed record holds
_BY_VALUE = {e: {m.value: i for m, i in codes.items()} for e, codes in CODES.items()}
_POS = record_codec.POS
_P_ID, _P_HASH = _POS["memory_id"], _POS["content_hash"]
_P_LEVEL, _P_APP, _P_SESSION = _POS["level"], _POS["app_id"], _POS["session_id"]
_P_IMP, _P_CONTENT = _POS["is_important"], _POS["content"]
_P_STATUS, _P_OWN, _P_TYPE = _POS["status"], _POS["ownership"], _POS["mem_type"]
_P_WEIGHT, _P_WEIGHT_AT = _POS["weight"], _POS["weight_at"]
_P_INVALID, _P_TAGS = _POS["invalid_at"], _POS["custom_tags"]
_P_EXPIRE, _P_RECALLED = _POS["expire_at"], _POS["last_recalled_at"]
# the per-row columns besides the matrix, moved together when a row is removed
_COLUMNS = (
    "_inv", "_hash", "_level", "_important", "_app", "_session", "_status", "_own", "_type",
    "_invalid", "_weight", "_weight_at", "_persona", "_latin", "_expire",
)  # fmt: skip
# the columns a record's fields give directly (``UserIndex._fields``), in its order
_FIELD_COLUMNS = (
    "_hash", "_level", "_important", "_app", "_session", "_status", "_own", "_type",
    "_invalid", "_weight", "_weight_at", "_persona", "_expire",
)  # fmt: skip

_US = timedelta(microseconds=1)
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
        # What recall filters and ranks on, so that it decodes only the records it
        # returns (a decode is ~7 µs; a recall meets ~100 candidates for its top 10):
        self._session = np.zeros(capacity, dtype=np.int32)  # index into _sessions
        self._sessions: dict[str | None, int] = {None: 0}
        self._status = np.zeros(capacity, dtype=np.uint8)
        self._own = np.zeros(capacity, dtype=np.uint8)
        self._type = np.zeros(capacity, dtype=np.uint8)
        self._invalid = np.zeros(capacity, dtype=np.bool_)  # invalid_at is set
        self._weight = np.zeros(capacity, dtype=np.float64)
        self._weight_at = np.zeros(capacity, dtype=np.int64)  # µs since the epoch
        self._persona = np.zeros(capacity, dtype=np.bool_)  # exempt from decay
        self._latin = np.zeros(capacity, dtype=np.float64)  # latin_share of the content
        self._expire = np.zeros(capacity, dtype=np.int64)  # expire_at, µs; 0: none
        # the user's paged-out memories (ARCHIVED by the capacity), searched by recall only
        self.paged: UserIndex | None = None
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
        arrays = self._q.nbytes + self._lexical.nbytes
        arrays += sum(getattr(self, name).nbytes for name in _COLUMNS)
        paged = 0 if self.paged is None else self.paged.nbytes
        fixed = INDEX_BYTES + RECORD_BYTES * len(self._ids)
        return int(arrays + self._blob_bytes + fixed + paged)

    def holds(self, memory_id: str) -> bool:
        """Held here or in ``paged`` (``in`` asks about the ACTIVE ones only)."""
        return memory_id in self._row or (self.paged is not None and memory_id in self.paged)

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
        terms: Mapping[str, int] | Postings | None = None,
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
        for name, value in zip(_FIELD_COLUMNS, self._fields(vals), strict=True):
            getattr(self, name)[i] = value
        if changed:
            self._latin[i] = latin_share(vals[_P_CONTENT])
            if isinstance(terms, Postings):
                self._lexical.add_postings(i, terms)
            else:
                self._lexical.add(i, terms if terms is not None else term_counts(vals[_P_CONTENT]))

    def fill(
        self, records: Sequence[tuple[bytes, list[Any], Mapping[str, int]]], rows: bytes
    ) -> None:
        """Load an empty index at once: ``records`` as (record bytes, parsed fields, term
        counts) and ``rows``, their quantized rows in the same order, each as
        ``row_bytes`` wrote it, joined. The same index as a :meth:`put` of each (a unit
        test holds them equal), in a few numpy calls instead of ~20 assignments a
        memory: how a cold user loads from a Redis snapshot (200 memories: 2.9 against 4.5 ms)."""
        if self._ids:
            raise ValueError("fill needs an empty index")
        n = len(records)
        width = self.dim + 4
        if len(rows) != n * width:
            raise ValueError("snapshot rows do not match its records")
        if n > self._q.shape[0]:
            self._q = np.zeros((n, self.dim), dtype=np.int8)
            for name in _COLUMNS:
                setattr(self, name, np.zeros(n, dtype=getattr(self, name).dtype))
        self._ids = [vals[_P_ID] for _, vals, _ in records]
        self._row = {mid: i for i, mid in enumerate(self._ids)}
        if len(self._row) != n:
            raise ValueError("a memory twice in one snapshot")
        self._blobs = [blob for blob, _, _ in records]
        self._blob_bytes = sum(map(len, self._blobs))
        table = np.frombuffer(rows, dtype=np.uint8).reshape(n, width)
        self._q[:n] = table[:, : self.dim].view(np.int8)
        self._inv[:n] = table[:, self.dim :].copy().view(np.float32).ravel()
        if n:
            columns = zip(*[self._fields(vals) for _, vals, _ in records], strict=True)
            for name, column in zip(_FIELD_COLUMNS, columns, strict=True):
                getattr(self, name)[:n] = column
            self._latin[:n] = [latin_share(vals[_P_CONTENT]) for _, vals, _ in records]
        self._lexical.add_many([terms for _, _, terms in records])

    def _fields(self, vals: list[Any]) -> tuple[Any, ...]:
        """The ``_FIELD_COLUMNS`` values of a parsed record (app and session coded)."""
        session = vals[_P_SESSION] or None
        return (
            hash_prefix(vals[_P_HASH]),
            _BY_VALUE[Level][vals[_P_LEVEL]],
            bool(vals[_P_IMP]),
            self._app_code(vals[_P_APP]),
            self._sessions.setdefault(session, len(self._sessions)),
            _BY_VALUE[Status][vals[_P_STATUS]],
            _BY_VALUE[Ownership][vals[_P_OWN]],
            _BY_VALUE[MemType][vals[_P_TYPE]],
            vals[_P_INVALID] is not None,
            vals[_P_WEIGHT],
            vals[_P_WEIGHT_AT],
            is_persona(Ownership(vals[_P_OWN]), vals[_P_TAGS]),
            vals[_P_EXPIRE] or 0,
        )

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

    def paged_index(self) -> UserIndex:
        """``paged``, created when first needed."""
        if self.paged is None:
            self.paged = UserIndex(self.user_id, self.dim, capacity=16, tenant=self.tenant_id)
        return self.paged

    def page_out(self, record: MemoryRecord) -> bool:
        """Move the held row of ``record.memory_id`` into ``paged`` as ``record`` (its new,
        ARCHIVED version): the same int8 row and postings, nothing embedded or tokenized
        again. False when this index does not hold it."""
        return _move(self, self.paged_index(), record)

    def page_in(self, record: MemoryRecord) -> bool:
        """The reverse of :meth:`page_out` (a paged-out memory ACTIVE again); False when
        ``paged`` does not hold it."""
        return self.paged is not None and _move(self.paged, self, record)

    def paged_rows(self, now_us: int, settings: Settings) -> np.ndarray:
        """``core.index_search.paged_rows``: the paged-out rows at ``now_us``."""
        return index_search.paged_rows(self, now_us, settings)

    def remove(self, memory_id: str) -> None:
        """Forget the memory, held here or in ``paged``."""
        if self.paged is not None:
            self.paged.remove(memory_id)
        i = self._row.pop(memory_id, None)
        if i is None:
            return
        self._lexical.remove(i)
        self._blob_bytes -= len(self._blobs[i])
        last = len(self._ids) - 1
        if i != last:  # move the last row into the hole
            moved = self._ids[last]
            self._ids[i], self._blobs[i] = moved, self._blobs[last]
            self._q[i] = self._q[last]
            for name in _COLUMNS:
                a = getattr(self, name)
                a[i] = a[last]
            self._row[moved] = i
            self._lexical.move(last, i)
        self._ids.pop()
        self._blobs.pop()

    # ------------------------------------------------------------ reads
    def allowed(self, pred: Scoped) -> tuple[np.ndarray, bool]:
        """``core.index_search.allowed``: the rows ``pred`` accepts by the columns."""
        return index_search.allowed(self, pred)

    def facts(self, memory_ids: Iterable[str]) -> dict[str, Fact]:
        """The ranking facts of the held ones among ``memory_ids``, without decoding."""
        out = {}
        for mid in memory_ids:
            i = self._row.get(mid)
            if i is not None:
                out[mid] = Fact(
                    float(self._weight[i]),
                    int(self._weight_at[i]),
                    bool(self._important[i]),
                    bool(self._persona[i]),
                    float(self._latin[i]),
                )
        return out

    def blob(self, memory_id: str) -> bytes | None:
        """The held record's bytes (immutable: decode them after releasing ``lock``)."""
        i = self._row.get(memory_id)
        return None if i is None else self._blobs[i]

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

    def eviction_candidates(self, now: datetime, settings: Settings) -> Iterator[EvictionCandidate]:
        """Every held memory as a capacity ``EvictionCandidate``, without building records:
        its weight now from the columns (``weight_at_us``, the same number as
        ``memory_weight_now`` of the record), its last recall read from its bytes."""
        now_us = (now - record_codec.EPOCH) // _US
        n = len(self._ids)
        w0, anchor = self._weight[:n].tolist(), self._weight_at[:n].tolist()
        level, app = self._level[:n].tolist(), self._app[:n].tolist()
        important, persona = self._important[:n].tolist(), self._persona[:n].tolist()
        for i, mid in enumerate(self._ids):
            weight = weight_at_us(
                w0[i], anchor[i], now_us, settings, is_important=important[i], persona=persona[i]
            )
            recalled = record_codec.parse(self._blobs[i])[_P_RECALLED]
            at = None if recalled is None else record_codec.EPOCH + recalled * _US
            yield EvictionCandidate(
                mid, _LEVELS[level[i]], self._apps[app[i]], weight, at, important[i]
            )

    def contents(self) -> list[str]:
        """Every held memory's text, in row order, without building a record."""
        return [record_codec.parse(blob)[_P_CONTENT] for blob in self._blobs]

    def scope_counts(self) -> dict[tuple[Level, str | None, bool], int]:
        """How many held memories each (level, app_id, is_important) has: :meth:`scopes`
        counted in numpy (the writer's capacity counters, once per batch)."""
        n = len(self._ids)
        code = (self._app[:n].astype(np.int64) * len(_LEVELS) + self._level[:n]) * 2
        keys, counts = np.unique(code + self._important[:n], return_counts=True)
        apps, out = self._apps, {}
        for key, count in zip(keys.tolist(), counts.tolist(), strict=True):
            app, rest = divmod(key // 2, len(_LEVELS))
            out[(_LEVELS[rest], apps[app], bool(key % 2))] = count
        return out

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
        rows: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """``core.index_search.dense``: the top ``limit`` by cosine."""
        return index_search.dense(self, query, limit, keep, memo, rows)

    def lexical(
        self,
        query: str,
        limit: int,
        keep: Callable[[MemoryRecord], bool] | None = None,
        memo: Decoded | None = None,
        rows: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """``core.index_search.lexical``: the top ``limit`` by normalized BM25."""
        return index_search.lexical(self, query, limit, keep, memo, rows)

    def cosine(self, query: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
        q = unit(query)
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
        for name in _COLUMNS:
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def _app_index(self, app_id: str | None) -> int:
        try:
            return self._apps.index(app_id)
        except ValueError:
            return -1

    def _app_code(self, app_id: str | None) -> int:
        try:
            return self._apps.index(app_id or None)
        except ValueError:
            self._apps.append(app_id)
            return len(self._apps) - 1


def _move(src: UserIndex, dst: UserIndex, record: MemoryRecord) -> bool:
    """Move ``record``'s row from ``src`` to ``dst`` as ``record``: its int8 row and
    postings as held."""
    i = src._row.get(record.memory_id)
    if i is None:
        return False
    row = (src._q[i].copy(), float(src._inv[i]))
    postings = src._lexical.postings(i)
    src.remove(record.memory_id)
    dst.put(record_codec.encode(record), record_codec.values(record), row, postings)
    return True
