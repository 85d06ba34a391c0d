"""One user's active memories in memory: compact records, an int8 vector matrix and BM25
postings in arrays.

A user holds at most 2,000 active memories (docs/architecture.md#processes-and-data-flow),
so exact cosine over a contiguous matrix answers in well under a millisecond; this is
what both the evolution step of ingest and the recall tier search. The cache holds
hundreds of users, so the layout is what a memory costs (issue 13 asked for ≤ 1 KB;
``RECORD_BYTES``):

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

The columns are a ``core.index_columns.Columns``; the searches (``core.index_search``)
and the views (``core.index_views``) are functions of them. This class owns the columns,
the lock and every mutation, and answers the reads through those functions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from core import index_search, index_views, record_codec
from core.calibration import latin_share
from core.capacity import EvictionCandidate
from core.entity_resolution import EntityRegistry
from core.index_columns import CODES, PER_ROW, Columns, hash_prefix
from core.index_columns import Decoded as Decoded  # re-exported: the writer's memo type
from core.index_search import Scoped
from core.index_views import ByHash, Fact, Records
from core.lexical import indexed_text, term_counts
from core.lexical_arrays import Postings
from core.settings import Settings
from core.vector_rows import quantize
from core.weights import is_persona
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.tenants import DEFAULT_TENANT

# Per memory, besides the arrays (int8 row, columns, postings: ``nbytes`` counts them as
# allocated) and the record's bytes: the id string, its list slot and dict entry and the
# bytes object's header. tracemalloc over 5 users × 200 mixed English / Chinese memories
# of ~30 characters: 945 bytes a memory in all (508 of arrays, 330 of record bytes, 106
# of the rest), against 4.3 KB with dataclass records, float32 rows and dict postings;
# the test_user_index budget test holds the estimate to the measurement.
RECORD_BYTES = 125  # with ~15 bytes of margin: the budget is a bound
# Per index, whatever its size: the object, its attribute dict and its ``Columns``, the
# arrays' headers, its lock and helper objects (~1.4 KB more once the ``expire`` column
# and ``paged`` came), with margin.
INDEX_BYTES = 2048

# column codes of the enums, by the value a parsed record holds
_BY_VALUE = {e: {m.value: i for m, i in codes.items()} for e, codes in CODES.items()}
_POS = record_codec.POS
_P_ID, _P_HASH = _POS["memory_id"], _POS["content_hash"]
_P_LEVEL, _P_APP, _P_SESSION = _POS["level"], _POS["app_id"], _POS["session_id"]
_P_IMP, _P_CONTENT = _POS["is_important"], _POS["content"]
_P_STATUS, _P_OWN, _P_TYPE = _POS["status"], _POS["ownership"], _POS["mem_type"]
_P_WEIGHT, _P_WEIGHT_AT = _POS["weight"], _POS["weight_at"]
_P_INVALID, _P_TAGS = _POS["invalid_at"], _POS["custom_tags"]
_P_EXPIRE, _P_ENTITIES = _POS["expire_at"], _POS["entities"]
# the columns a record's fields give directly (``UserIndex._fields``), in its order
_FIELD_COLUMNS = (
    "hashes", "level", "important", "app", "session", "status", "ownership", "mem_type",
    "invalid", "weight", "weight_at", "persona", "expire",
)  # fmt: skip
# ``_FIELD_COLUMNS``' values of one record
_Fields = tuple[int, int, bool, int, int, int, int, int, bool, float, int, bool, int]


class UserIndex:
    def __init__(self, user_id: int, dim: int, capacity: int = 64, tenant: str = DEFAULT_TENANT):
        self.user_id = user_id
        self.tenant_id = tenant
        self.dim = dim
        self.lock = threading.RLock()
        # content_hash -> memory_id of ARCHIVED memories: a fact said again is restored,
        # not stored twice (docs/architecture.md#dedup-and-evolution). Hashes only, no records.
        self.dormant: dict[str, str] = {}
        # one object for the index's life (its fields may be replaced): the views follow it
        self.columns = Columns.empty(capacity, dim)
        self._blob_bytes = 0
        # the user's paged-out memories (ARCHIVED by the capacity), searched by recall only
        self.paged: UserIndex | None = None
        self.records = Records(self.columns)
        self.by_hash = ByHash(self.columns)
        # the user's entities (docs/architecture.md#entities), built by the writer from
        # the held records on first use; a reloaded index builds it again
        self.entity_registry: EntityRegistry | None = None
        # the user's stored profiles by id (docs/architecture.md#the-profile), read by the
        # writer from the stores on first use and followed from then on; never searched
        self.derived: dict[str, MemoryRecord] | None = None
        self.derived_seen = 0  # versions of them mirrored so far (``note_derived``)
        # the user's ACTIVE key-value items by id (docs/architecture.md#key-value-items),
        # read by the writer from the stores on first use and followed from then on;
        # never searched, counted or evicted here
        self.items: dict[str, MemoryRecord] | None = None

    def __len__(self) -> int:
        return len(self.columns.ids)

    def __contains__(self, memory_id: str) -> bool:
        return memory_id in self.columns.row

    @property
    def nbytes(self) -> int:
        """Footprint for the cache's memory budget: the arrays (matrix, columns,
        postings), each record's bytes, and ``RECORD_BYTES`` a memory for the rest; the
        held items (only users with items pay for summing them)."""
        paged = 0 if self.paged is None else self.paged.nbytes
        fixed = INDEX_BYTES + RECORD_BYTES * len(self.columns.ids)
        items = 0
        if self.items:
            items = sum(RECORD_BYTES + len(r.content) for r in self.items.values())
        return int(self.columns.nbytes + self._blob_bytes + fixed + paged + items)

    def holds(self, memory_id: str) -> bool:
        """Held here or in ``paged`` (``in`` asks about the ACTIVE ones only)."""
        return memory_id in self.columns.row or (self.paged is not None and memory_id in self.paged)

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
        c = self.columns
        mid = vals[_P_ID]
        i = c.row.get(mid)
        changed = True
        if i is None:
            if row is None:
                return  # a meta change for a memory whose vector we never had
            i = len(c.ids)
            if i == c.q.shape[0]:
                self._grow()
            c.row[mid] = i
            c.ids.append(mid)
            c.blobs.append(blob)
        else:
            old = c.blobs[i]
            changed = record_codec.parse(old)[_P_CONTENT] != vals[_P_CONTENT]
            self._blob_bytes -= len(old)
            c.blobs[i] = blob
            if changed:
                c.lexical.remove(i)
        self._blob_bytes += len(blob)
        if row is not None:
            c.q[i], c.inv[i] = row
        for name, value in zip(_FIELD_COLUMNS, self._fields(vals), strict=True):
            getattr(c, name)[i] = value
        if changed:
            c.latin[i] = latin_share(vals[_P_CONTENT])
            if isinstance(terms, Postings):
                c.lexical.add_postings(i, terms)
            else:
                if terms is None:
                    terms = term_counts(indexed_text(vals[_P_CONTENT], vals[_P_ENTITIES]))
                c.lexical.add(i, terms)

    def fill(
        self, records: Sequence[tuple[bytes, list[Any], Mapping[str, int]]], rows: bytes
    ) -> None:
        """Load an empty index at once: ``records`` as (record bytes, parsed fields, term
        counts) and ``rows``, their quantized rows in the same order, each as
        ``row_bytes`` wrote it, joined. The same index as a :meth:`put` of each (a unit
        test holds them equal), in a few numpy calls instead of ~20 assignments a
        memory: how a cold user loads from a Redis snapshot (200 memories: 2.9 against 4.5 ms)."""
        c = self.columns
        if c.ids:
            raise ValueError("fill needs an empty index")
        n = len(records)
        width = self.dim + 4
        if len(rows) != n * width:
            raise ValueError("snapshot rows do not match its records")
        if n > c.q.shape[0]:
            c.q = np.zeros((n, self.dim), dtype=np.int8)
            for name in PER_ROW:
                setattr(c, name, np.zeros(n, dtype=getattr(c, name).dtype))
        c.ids = [vals[_P_ID] for _, vals, _ in records]
        c.row = {mid: i for i, mid in enumerate(c.ids)}
        if len(c.row) != n:
            raise ValueError("a memory twice in one snapshot")
        c.blobs = [blob for blob, _, _ in records]
        self._blob_bytes = sum(map(len, c.blobs))
        table = np.frombuffer(rows, dtype=np.uint8).reshape(n, width)
        c.q[:n] = table[:, : self.dim].view(np.int8)
        c.inv[:n] = table[:, self.dim :].copy().view(np.float32).ravel()
        if n:
            columns = zip(*[self._fields(vals) for _, vals, _ in records], strict=True)
            for name, column in zip(_FIELD_COLUMNS, columns, strict=True):
                getattr(c, name)[:n] = column
            c.latin[:n] = [latin_share(vals[_P_CONTENT]) for _, vals, _ in records]
        c.lexical.add_many([terms for _, _, terms in records])

    def _fields(self, vals: list[Any]) -> _Fields:
        """The ``_FIELD_COLUMNS`` values of a parsed record (app and session coded)."""
        session = vals[_P_SESSION] or None
        sessions = self.columns.sessions
        return (
            hash_prefix(vals[_P_HASH]),
            _BY_VALUE[Level][vals[_P_LEVEL]],
            bool(vals[_P_IMP]),
            self._app_code(vals[_P_APP]),
            sessions.setdefault(session, len(sessions)),
            _BY_VALUE[Status][vals[_P_STATUS]],
            _BY_VALUE[Ownership][vals[_P_OWN]],
            _BY_VALUE[MemType][vals[_P_TYPE]],
            vals[_P_INVALID] is not None,
            vals[_P_WEIGHT],
            vals[_P_WEIGHT_AT],
            is_persona(Ownership(vals[_P_OWN]), vals[_P_TAGS]),
            vals[_P_EXPIRE] or 0,
        )

    def note_derived(self, record: MemoryRecord) -> None:
        """A written version of one of the user's profiles (under ``lock``): followed
        when they are held, and counted, so a reader that loaded them from the store
        before this version keeps none of what it read."""
        self.derived_seen += 1
        if self.derived is not None:
            self.derived[record.memory_id] = record

    def note_item(self, record: MemoryRecord) -> None:
        """A written version of one of the user's items (under ``lock``): followed when
        they are held (an item that left ACTIVE is forgotten)."""
        if self.items is None:
            return
        if record.status is Status.ACTIVE:
            self.items[record.memory_id] = record
        else:
            self.items.pop(record.memory_id, None)

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

    def remove(self, memory_id: str) -> None:
        """Forget the memory, held here or in ``paged``."""
        if self.paged is not None:
            self.paged.remove(memory_id)
        c = self.columns
        i = c.row.pop(memory_id, None)
        if i is None:
            return
        c.lexical.remove(i)
        self._blob_bytes -= len(c.blobs[i])
        last = len(c.ids) - 1
        if i != last:  # move the last row into the hole
            moved = c.ids[last]
            c.ids[i], c.blobs[i] = moved, c.blobs[last]
            c.q[i] = c.q[last]
            for name in PER_ROW:
                a = getattr(c, name)
                a[i] = a[last]
            c.row[moved] = i
            c.lexical.move(last, i)
        c.ids.pop()
        c.blobs.pop()

    # ------------------------------------------------------------ reads
    def allowed(self, pred: Scoped) -> tuple[np.ndarray, bool]:
        """``core.index_search.allowed``: the rows ``pred`` accepts by the columns."""
        return index_search.allowed(self.columns, pred, self.user_id, self.tenant_id)

    def dense(
        self,
        query: np.ndarray,
        limit: int,
        keep: Callable[[MemoryRecord], bool] | None = None,
        memo: Decoded | None = None,
        rows: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """``core.index_search.dense``: the top ``limit`` by cosine."""
        return index_search.dense(self.columns, query, limit, keep, memo, rows)

    def lexical(
        self,
        query: str,
        limit: int,
        keep: Callable[[MemoryRecord], bool] | None = None,
        memo: Decoded | None = None,
        rows: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """``core.index_search.lexical``: the top ``limit`` by normalized BM25."""
        return index_search.lexical(self.columns, query, limit, keep, memo, rows)

    def paged_rows(self, now_us: int, settings: Settings) -> np.ndarray:
        """``core.index_search.paged_rows``: the paged-out rows at ``now_us``."""
        return index_search.paged_rows(self.columns, now_us, settings)

    def facts(self, memory_ids: Iterable[str]) -> dict[str, Fact]:
        """``core.index_views.facts``: the ranking facts of the held ones, not decoded."""
        return index_views.facts(self.columns, memory_ids)

    def cosine(self, query: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
        """``core.index_views.cosine`` with the held ones among ``memory_ids``."""
        return index_views.cosine(self.columns, query, memory_ids)

    def blob(self, memory_id: str) -> bytes | None:
        """The held record's bytes (immutable: decode them after releasing ``lock``)."""
        c = self.columns
        i = c.row.get(memory_id)
        return None if i is None else c.blobs[i]

    def record(self, memory_id: str, memo: Decoded | None = None) -> MemoryRecord | None:
        """``core.index_views.record``: the held record, decoded (None when not held);
        with ``memo``, shared: do not change it."""
        return index_views.record(self.columns, memory_id, memo)

    def eviction_candidates(self, now: datetime, settings: Settings) -> Iterator[EvictionCandidate]:
        """``core.index_views.eviction_candidates``: every held memory, not decoded."""
        return index_views.eviction_candidates(self.columns, now, settings)

    def contents(self) -> list[str]:
        """Every held memory's text, in row order, without building a record."""
        return index_views.contents(self.columns)

    def scope_counts(self) -> dict[tuple[Level, str | None, bool], int]:
        """How many held memories each (level, app_id, is_important) has."""
        return index_views.scope_counts(self.columns)

    def scopes(self) -> Iterator[tuple[Level, str | None, bool]]:
        """(level, app_id, is_important) of every held memory, without decoding."""
        return index_views.scopes(self.columns)

    def vector(self, memory_id: str) -> np.ndarray | None:
        """The held row as a float32 unit vector (the int8 row, dequantized)."""
        return index_views.vector(self.columns, memory_id)

    def terms(self, memory_id: str) -> dict[str, int]:
        """The term counts the lexical channel indexes ``memory_id`` under (its content,
        tokenized: the postings keep only the terms' hashes)."""
        rec = self.record(memory_id)
        return {} if rec is None else dict(term_counts(indexed_text(rec.content, rec.entities)))

    def encoded(self) -> list[tuple[bytes, bytes]]:
        """Every held memory as (record bytes, row bytes: ``row_bytes``), in row order
        (for a snapshot)."""
        return index_views.encoded(self.columns)

    # ------------------------------------------------------------ internals
    def _grow(self) -> None:
        c = self.columns
        size = 2 * c.q.shape[0]
        q = np.zeros((size, self.dim), dtype=np.int8)
        q[: c.q.shape[0]] = c.q
        c.q = q
        for name in PER_ROW:
            old = getattr(c, name)
            new = np.zeros(size, dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(c, name, new)

    def _app_code(self, app_id: str | None) -> int:
        apps = self.columns.apps
        try:
            return apps.index(app_id or None)
        except ValueError:
            apps.append(app_id)
            return len(apps) - 1


def _move(src: UserIndex, dst: UserIndex, record: MemoryRecord) -> bool:
    """Move ``record``'s row from ``src`` to ``dst`` as ``record``: its int8 row and
    postings as held."""
    c = src.columns
    i = c.row.get(record.memory_id)
    if i is None:
        return False
    row = (c.q[i].copy(), float(c.inv[i]))
    postings = c.lexical.postings(i)
    src.remove(record.memory_id)
    dst.put(record_codec.encode(record), record_codec.values(record), row, postings)
    return True
