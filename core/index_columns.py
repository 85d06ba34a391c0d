"""The column storage of one user's index (``core.user_index.UserIndex``): what its
searches (``core.index_search``) and views (``core.index_views``) read, as plain public
fields, and the codes its columns hold.

``UserIndex`` owns one ``Columns`` for its life, its lock and every mutation; the searches
and views are functions of the columns, so imports run one way: this module, then the
searches and views, then ``UserIndex``. A field may be replaced by a bigger array (the
index grows, or fills at once) but never the ``Columns`` object itself, so a view made
once (``idx.records``) follows the index. Row ``i`` of every per-row column is the memory
``ids[i]``; rows past ``len(ids)`` are spare capacity.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from core.lexical_arrays import PostingArrays
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.memory import MemoryRecord

# the small codes the index's columns hold for each enum member
CODES: dict[type[Enum], dict[Enum, int]] = {
    e: {m: i for i, m in enumerate(e)} for e in (Level, Status, Ownership, MemType)
}
Coded = type[Level] | type[Status] | type[Ownership] | type[MemType]
Decoded = dict[str, MemoryRecord]  # a caller's memo: what one read decoded already

# the per-row columns besides the matrix ``q``, moved together when a row moves
PER_ROW = (
    "inv", "hashes", "level", "important", "app", "session", "status", "ownership",
    "mem_type", "invalid", "weight", "weight_at", "persona", "latin", "expire",
)  # fmt: skip


@dataclass(slots=True, eq=False)
class Columns:
    """One user's memories as columns: ids and record bytes, the int8 matrix, the
    per-row fields recall filters and ranks on without decoding (a decode is ~7 µs; a
    recall meets ~100 candidates for its top 10) and the BM25 postings."""

    ids: list[str]  # by row
    row: dict[str, int]  # memory_id -> row
    blobs: list[bytes]  # each record as its ``core.record_codec`` bytes, by row
    q: np.ndarray  # int8 (rows, dim): ``core.vector_rows.quantize``
    inv: np.ndarray  # float32: 1 / |q| per row
    hashes: np.ndarray  # uint64: the content hash's first 8 bytes (``hash_prefix``)
    level: np.ndarray  # uint8: ``CODES[Level]``
    important: np.ndarray  # bool
    app: np.ndarray  # int16: index into ``apps``
    apps: list[str | None]  # app ids by code; code 0 is None
    session: np.ndarray  # int32: the code in ``sessions``
    sessions: dict[str | None, int]  # session id -> code; None is 0
    status: np.ndarray  # uint8: ``CODES[Status]``
    ownership: np.ndarray  # uint8: ``CODES[Ownership]``
    mem_type: np.ndarray  # uint8: ``CODES[MemType]``
    invalid: np.ndarray  # bool: invalid_at is set
    weight: np.ndarray  # float64
    weight_at: np.ndarray  # int64: µs since the epoch
    persona: np.ndarray  # bool: exempt from decay
    latin: np.ndarray  # float64: latin_share of the content
    expire: np.ndarray  # int64: expire_at, µs; 0: none
    lexical: PostingArrays

    @classmethod
    def empty(cls, capacity: int, dim: int) -> Columns:
        return cls(
            ids=[],
            row={},
            blobs=[],
            q=np.zeros((capacity, dim), dtype=np.int8),
            inv=np.zeros(capacity, dtype=np.float32),
            hashes=np.zeros(capacity, dtype=np.uint64),
            level=np.zeros(capacity, dtype=np.uint8),
            important=np.zeros(capacity, dtype=np.bool_),
            app=np.zeros(capacity, dtype=np.int16),
            apps=[None],
            session=np.zeros(capacity, dtype=np.int32),
            sessions={None: 0},
            status=np.zeros(capacity, dtype=np.uint8),
            ownership=np.zeros(capacity, dtype=np.uint8),
            mem_type=np.zeros(capacity, dtype=np.uint8),
            invalid=np.zeros(capacity, dtype=np.bool_),
            weight=np.zeros(capacity, dtype=np.float64),
            weight_at=np.zeros(capacity, dtype=np.int64),
            persona=np.zeros(capacity, dtype=np.bool_),
            latin=np.zeros(capacity, dtype=np.float64),
            expire=np.zeros(capacity, dtype=np.int64),
            lexical=PostingArrays(capacity=capacity),
        )

    @property
    def nbytes(self) -> int:
        """The arrays as allocated: the matrix, the per-row columns and the postings."""
        arrays = self.q.nbytes + self.lexical.nbytes
        arrays += sum(getattr(self, name).nbytes for name in PER_ROW)
        return int(arrays)


def hash_prefix(content_hash: str) -> int:
    """The ``hashes`` column's value of a content hash."""
    try:
        return int(content_hash[:16], 16)
    except ValueError:  # not hex: any stable 64 bits will do, the full hash confirms
        return hash(content_hash) & 0xFFFFFFFFFFFFFFFF
