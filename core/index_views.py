"""Views of a ``core.user_index.UserIndex`` over its columns: ``idx.records`` (decoded
when looked up), ``idx.by_hash`` (exact-content lookup) and ``shared_decode`` (the
readers' cache of decoded records)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from core import record_codec
from core.calibration import latin_share
from core.weights import is_persona
from schemas.enums import Level, MemType, Ownership, Status
from schemas.memory import MemoryRecord

if TYPE_CHECKING:
    from core.user_index import UserIndex

# the small codes the index's columns hold for each enum member
CODES = {e: {m: i for i, m in enumerate(e)} for e in (Level, Status, Ownership, MemType)}
Coded = type[Level] | type[Status] | type[Ownership] | type[MemType]
_US = timedelta(microseconds=1)
_P_HASH = record_codec.POS["content_hash"]
_P_ID = record_codec.POS["memory_id"]


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
    """``idx.by_hash.get(content_hash)``: the held memory with exactly that content;
    ``idx.by_hash.find(content_hash, keep)``: the first one ``keep`` accepts (a scope
    may hold the same words as another scope: dedup looks only where the writer sees)."""

    def __init__(self, idx: UserIndex):
        self._idx = idx

    def get(self, content_hash: str, default: str | None = None) -> str | None:
        return self.find(content_hash, default=default)

    def find(
        self,
        content_hash: str,
        keep: Callable[[MemoryRecord], bool] | None = None,
        default: str | None = None,
    ) -> str | None:
        idx = self._idx
        n = len(idx._ids)
        for i in np.flatnonzero(idx._hash[:n] == hash_prefix(content_hash)):
            vals = record_codec.parse(idx._blobs[i])
            if vals[_P_HASH] == content_hash and (
                keep is None or keep(record_codec.decode(idx._blobs[i]))
            ):
                found: str = vals[_P_ID]
                return found
        return default


@functools.lru_cache(maxsize=4096)
def shared_decode(blob: bytes) -> MemoryRecord:
    """``record_codec.decode`` for readers, remembered for the last 4,096 records read: a
    user's next recalls (sessions, popular users) meet the same candidates again. Keyed
    by the bytes themselves (their hash is computed once per object), so a changed
    record, which is new bytes, is never answered from an old entry. ~12 MB at most,
    outside the cache budget. The records are shared: readers must not change them."""
    return record_codec.decode(blob)


def hash_prefix(content_hash: str) -> int:
    try:
        return int(content_hash[:16], 16)
    except ValueError:  # not hex: any stable 64 bits will do, the full hash confirms
        return hash(content_hash) & 0xFFFFFFFFFFFFFFFF


class Fact(NamedTuple):
    """What ranking needs of a memory besides its scores (``core.weights.weight_at_us``
    and ``Calibration.of_shares``): from the hot cache's columns, or of a record."""

    weight: float
    weight_at_us: int
    is_important: bool
    persona: bool
    latin: float

    @classmethod
    def of(cls, m: MemoryRecord) -> Fact:
        return cls(
            m.weight,
            (m.weight_at - record_codec.EPOCH) // _US,
            m.is_important,
            is_persona(m.ownership, m.custom_tags),
            latin_share(m.content),
        )
