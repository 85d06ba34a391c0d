"""The cold path's per-user record sets: every non-deleted memory, plus a BM25 index.

Milvus answers the cold path's dense search (archive, time travel) but holds no content
— content is encrypted at rest in ClickHouse only, and copying it into Milvus would
put plaintext (or a second key-holder) where the privacy design has none. So the
records the cold path ranks and returns come from here: loaded from ClickHouse once on
a user's first archive/as-of recall (like the hot cache's fill), then kept current by
the MemoryStore write listener. No recall reads ClickHouse per request.

It holds ACTIVE, ARCHIVED and SUPERSEDED records (DELETED leave at once), because an
``as_of`` recall may return any of them; the BM25 index gives the cold path the same
lexical channel as the hot one, so Chinese archive recall works with the English model.
LRU by an estimated byte budget; a write that lands while a user is loading makes that
load's result used once and not cached, so a stale load never outlives the write.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from core.lexical import BM25Index
from schemas.enums import Status
from schemas.memory import MemoryRecord
from sinks.memory_store import MemoryStore, WriteBatch

COLD_STATUSES = (Status.ACTIVE, Status.ARCHIVED, Status.SUPERSEDED)


@dataclass
class ColdEntry:
    user_id: int
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    lexical: BM25Index = field(default_factory=BM25Index)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def nbytes(self) -> int:
        return sum(len(r.content) * 4 + 600 for r in self.records.values())

    def upsert(self, record: MemoryRecord) -> None:
        old = self.records.get(record.memory_id)
        self.records[record.memory_id] = record
        if old is None or old.content != record.content:
            self.lexical.add(record.memory_id, record.content)

    def remove(self, memory_id: str) -> None:
        if self.records.pop(memory_id, None) is not None:
            self.lexical.remove(memory_id)


class ColdRecords:
    def __init__(self, store: MemoryStore, budget_bytes: int) -> None:
        self.store = store
        self.budget = budget_bytes
        self._users: OrderedDict[int, ColdEntry] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[int, bool] = {}  # user -> "a write arrived during the load"
        self._loaders: dict[int, threading.Lock] = {}
        self._sizes: dict[int, int] = {}  # estimated at load time

    def peek(self, user_id: int) -> ColdEntry | None:
        with self._lock:
            entry = self._users.get(user_id)
            if entry is not None:
                self._users.move_to_end(user_id)
            return entry

    def get(self, user_id: int) -> ColdEntry:
        """The user's entry, loading it from the store on a miss (one loader per user)."""
        entry = self.peek(user_id)
        if entry is not None:
            return entry
        with self._lock:
            loader = self._loaders.setdefault(user_id, threading.Lock())
        with loader:
            entry = self.peek(user_id)
            if entry is None:
                entry = self._load(user_id)
        with self._lock:
            self._loaders.pop(user_id, None)
        return entry

    def _load(self, user_id: int) -> ColdEntry:
        with self._lock:
            self._loading[user_id] = False
        entry = ColdEntry(user_id)
        try:
            for record in self.store.load(user_id, statuses=COLD_STATUSES):
                entry.upsert(record)
        finally:
            with self._lock:
                stale = self._loading.pop(user_id, True)
        if not stale:
            with self._lock:
                self._users[user_id] = entry
                self._sizes[user_id] = entry.nbytes
                self._evict()
        return entry

    def clear(self) -> None:
        """Forget every user (as ``HotCache.clear``; they reload on next touch)."""
        with self._lock:
            self._users.clear()
            self._sizes.clear()
            for user_id in self._loading:
                self._loading[user_id] = True

    def invalidate(self, user_id: int) -> None:
        with self._lock:
            self._users.pop(user_id, None)
            self._sizes.pop(user_id, None)
            if user_id in self._loading:
                self._loading[user_id] = True

    def apply(self, batch: WriteBatch) -> None:
        """Write listener: mirror an applied batch into the users held."""
        for m in batch.memories:
            with self._lock:
                if m.user_id in self._loading:
                    self._loading[m.user_id] = True
                entry = self._users.get(m.user_id)
            if entry is None:
                continue
            with entry.lock:
                if m.status is Status.DELETED:
                    entry.remove(m.memory_id)
                else:
                    entry.upsert(m)
        if batch.milvus_deletes:
            with self._lock:
                entries = list(self._users.values())
            for entry in entries:
                with entry.lock:
                    for mid in batch.milvus_deletes:
                        entry.remove(mid)

    def _evict(self) -> None:
        total = sum(self._sizes.values())
        while total > self.budget and len(self._users) > 1:
            dropped, _ = self._users.popitem(last=False)
            total -= self._sizes.pop(dropped, 0)
