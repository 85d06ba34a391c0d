"""Reads of one user's ``core.index_columns.Columns`` (under the index's ``lock``), as
functions of the columns: a record by id (``record``; ``Records`` is ``idx.records``),
exact-content lookup (``ByHash``: ``idx.by_hash``), the ranking facts, the eviction
candidates and the whole-user walks (scopes, contents, the snapshot's rows), none of which
decodes a record it does not return; and ``shared_decode``, the readers' cache of decoded
records. ``core.user_index.UserIndex`` answers through these."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import NamedTuple

import numpy as np

from core import record_codec
from core.calibration import latin_share
from core.capacity import EvictionCandidate
from core.index_columns import Columns, Decoded, hash_prefix
from core.settings import Settings
from core.vector_rows import row_bytes, unit
from core.weights import is_persona, weight_at_us
from memstream.schemas.enums import Level
from memstream.schemas.memory import MemoryRecord

_LEVELS = list(Level)
_US = timedelta(microseconds=1)
_P_HASH = record_codec.POS["content_hash"]
_P_ID = record_codec.POS["memory_id"]
_P_CONTENT = record_codec.POS["content"]
_P_RECALLED = record_codec.POS["last_recalled_at"]


class Records(Mapping[str, MemoryRecord]):
    """``idx.records``: the held records by id, each decoded when looked up (a walk over
    all of them decodes all of them: ~7 µs a memory)."""

    def __init__(self, columns: Columns):
        self._c = columns

    def __getitem__(self, memory_id: str) -> MemoryRecord:
        rec = record(self._c, memory_id)
        if rec is None:
            raise KeyError(memory_id)
        return rec

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._c.ids))

    def __len__(self) -> int:
        return len(self._c.ids)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._c.row


class ByHash:
    """``idx.by_hash.get(content_hash)``: the held memory with exactly that content;
    ``idx.by_hash.find(content_hash, keep)``: the first one ``keep`` accepts (a scope
    may hold the same words as another scope: dedup looks only where the writer sees)."""

    def __init__(self, columns: Columns):
        self._c = columns

    def get(self, content_hash: str, default: str | None = None) -> str | None:
        return self.find(content_hash, default=default)

    def find(
        self,
        content_hash: str,
        keep: Callable[[MemoryRecord], bool] | None = None,
        default: str | None = None,
    ) -> str | None:
        c = self._c
        n = len(c.ids)
        for i in np.flatnonzero(c.hashes[:n] == hash_prefix(content_hash)):
            vals = record_codec.parse(c.blobs[i])
            if vals[_P_HASH] == content_hash and (
                keep is None or keep(record_codec.decode(c.blobs[i]))
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


def record(c: Columns, memory_id: str, memo: Decoded | None = None) -> MemoryRecord | None:
    """The held record, decoded (None when not held). With ``memo`` (a reader: one
    recall), what it decoded is kept there, so a candidate met by both channels is
    decoded once, and the record comes from ``shared_decode``: do not change it."""
    if memo is not None and (rec := memo.get(memory_id)) is not None:
        return rec
    i = c.row.get(memory_id)
    if i is None:
        return None
    if memo is None:
        return record_codec.decode(c.blobs[i])
    rec = memo[memory_id] = shared_decode(c.blobs[i])
    return rec


def decoded_row(c: Columns, i: int, memo: Decoded) -> MemoryRecord:
    """``record`` with ``memo`` of the memory at row ``i`` (a search knows the row)."""
    mid = c.ids[i]
    rec = memo.get(mid)
    if rec is None:
        rec = memo[mid] = shared_decode(c.blobs[i])
    return rec


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


def facts(c: Columns, memory_ids: Iterable[str]) -> dict[str, Fact]:
    """The ranking facts of the held ones among ``memory_ids``, without decoding."""
    row, weight, weight_at = c.row, c.weight, c.weight_at
    important, persona, latin = c.important, c.persona, c.latin
    out = {}
    for mid in memory_ids:
        i = row.get(mid)
        if i is not None:
            out[mid] = Fact(
                float(weight[i]),
                int(weight_at[i]),
                bool(important[i]),
                bool(persona[i]),
                float(latin[i]),
            )
    return out


def cosine(c: Columns, query: np.ndarray, memory_ids: list[str]) -> dict[str, float]:
    """The cosine of ``query`` with each held one among ``memory_ids``."""
    q = unit(query)
    row, rows, inv = c.row, c.q, c.inv
    out = {}
    for m in memory_ids:
        i = row.get(m)
        if i is not None:
            out[m] = float(rows[i].astype(np.float32) @ q) * float(inv[i])
    return out


def vector(c: Columns, memory_id: str) -> np.ndarray | None:
    """The held row as a float32 unit vector (the int8 row, dequantized)."""
    i = c.row.get(memory_id)
    return None if i is None else c.q[i].astype(np.float32) * c.inv[i]


def eviction_candidates(
    c: Columns, now: datetime, settings: Settings
) -> Iterator[EvictionCandidate]:
    """Every held memory as a capacity ``EvictionCandidate``, without building records:
    its weight now from the columns (``weight_at_us``, the same number as
    ``memory_weight_now`` of the record), its last recall read from its bytes."""
    now_us = (now - record_codec.EPOCH) // _US
    n = len(c.ids)
    w0, anchor = c.weight[:n].tolist(), c.weight_at[:n].tolist()
    level, app = c.level[:n].tolist(), c.app[:n].tolist()
    important, persona = c.important[:n].tolist(), c.persona[:n].tolist()
    for i, mid in enumerate(c.ids):
        weight = weight_at_us(
            w0[i], anchor[i], now_us, settings, is_important=important[i], persona=persona[i]
        )
        recalled = record_codec.parse(c.blobs[i])[_P_RECALLED]
        at = None if recalled is None else record_codec.EPOCH + recalled * _US
        yield EvictionCandidate(mid, _LEVELS[level[i]], c.apps[app[i]], weight, at, important[i])


def contents(c: Columns) -> list[str]:
    """Every held memory's text, in row order, without building a record."""
    return [record_codec.parse(blob)[_P_CONTENT] for blob in c.blobs]


def scope_counts(c: Columns) -> dict[tuple[Level, str | None, bool], int]:
    """How many held memories each (level, app_id, is_important) has: ``scopes`` counted
    in numpy (the writer's capacity counters, once per batch)."""
    n = len(c.ids)
    code = (c.app[:n].astype(np.int64) * len(_LEVELS) + c.level[:n]) * 2
    keys, counts = np.unique(code + c.important[:n], return_counts=True)
    apps, out = c.apps, {}
    for key, count in zip(keys.tolist(), counts.tolist(), strict=True):
        app, rest = divmod(key // 2, len(_LEVELS))
        out[(_LEVELS[rest], apps[app], bool(key % 2))] = count
    return out


def scopes(c: Columns) -> Iterator[tuple[Level, str | None, bool]]:
    """(level, app_id, is_important) of every held memory, without decoding."""
    apps = c.apps
    n = len(c.ids)
    for lv, app, imp in zip(c.level[:n], c.app[:n], c.important[:n], strict=True):
        yield _LEVELS[lv], apps[app], bool(imp)


def encoded(c: Columns) -> list[tuple[bytes, bytes]]:
    """Every held memory as (record bytes, row bytes: ``row_bytes``), in row order (for a
    snapshot)."""
    return [(c.blobs[i], row_bytes(c.q[i], float(c.inv[i]))) for i in range(len(c.ids))]
