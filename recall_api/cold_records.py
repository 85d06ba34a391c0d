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
from dataclasses import dataclass, field

from core.lexical import BM25Index, indexed_text
from core.lru import LRU
from core.write_batch import WriteBatch
from memstream.schemas.enums import Status
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.tenants import DEFAULT_TENANT, UserKey
from sinks.memory_store import MemoryStore

COLD_STATUSES = (Status.ACTIVE, Status.ARCHIVED, Status.SUPERSEDED)


@dataclass
class ColdEntry:
    user_id: int
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    lexical: BM25Index = field(default_factory=BM25Index)
    lock: threading.Lock = field(default_factory=threading.Lock)
    tenant_id: str = DEFAULT_TENANT

    @property
    def nbytes(self) -> int:
        return sum(len(r.content) * 4 + 600 for r in self.records.values())

    def upsert(self, record: MemoryRecord) -> None:
        old = self.records.get(record.memory_id)
        self.records[record.memory_id] = record
        if old is None or old.content != record.content:
            self.lexical.add(record.memory_id, indexed_text(record.content, record.entities))

    def remove(self, memory_id: str) -> None:
        if self.records.pop(memory_id, None) is not None:
            self.lexical.remove(memory_id)


class ColdRecords:
    def __init__(self, store: MemoryStore, budget_bytes: int) -> None:
        self.store = store
        self.budget = budget_bytes
        # keyed by (tenant, user), as the hot cache; sized at load time, one user bigger
        # than the budget is held alone; a write mirrored in is not a use (peek)
        self._users: LRU[UserKey, ColdEntry] = LRU(
            maxsize=max(1, budget_bytes), getsizeof=lambda e: min(e.nbytes, max(1, budget_bytes))
        )
        self._lock = threading.Lock()
        self._loading: dict[UserKey, bool] = {}  # user -> "a write arrived during the load"
        self._loaders: dict[UserKey, threading.Lock] = {}

    def peek(self, user_id: int, *, tenant: str) -> ColdEntry | None:
        key = UserKey(tenant, user_id)
        with self._lock:
            return self._users.get(key)

    def get(self, user_id: int, *, tenant: str) -> ColdEntry:
        """The user's entry, loading it from the store on a miss (one loader per user)."""
        entry = self.peek(user_id, tenant=tenant)
        if entry is not None:
            return entry
        key = UserKey(tenant, user_id)
        with self._lock:
            loader = self._loaders.setdefault(key, threading.Lock())
        with loader:
            entry = self.peek(user_id, tenant=tenant)
            if entry is None:
                entry = self._load(key)
        with self._lock:
            self._loaders.pop(key, None)
        return entry

    def _load(self, key: UserKey) -> ColdEntry:
        with self._lock:
            self._loading[key] = False
        entry = ColdEntry(key.user_id, tenant_id=key.tenant)
        try:
            for record in self.store.load(key.user_id, statuses=COLD_STATUSES, tenant=key.tenant):
                entry.upsert(record)
        finally:
            with self._lock:
                stale = self._loading.pop(key, True)
        if not stale:
            with self._lock:
                self._users[key] = entry  # the least recent leave past the budget
        return entry

    def clear(self) -> None:
        """Forget every user (as ``HotCache.clear``; they reload on next touch)."""
        with self._lock:
            self._users.clear()
            for key in self._loading:
                self._loading[key] = True

    def invalidate(self, user_id: int, *, tenant: str) -> None:
        key = UserKey(tenant, user_id)
        with self._lock:
            self._users.pop(key, None)
            if key in self._loading:
                self._loading[key] = True

    def apply(self, batch: WriteBatch) -> None:
        """Write listener: mirror an applied batch into the users held."""
        for m in batch.memories:
            key = UserKey(m.tenant_id, m.user_id)
            with self._lock:
                if key in self._loading:
                    self._loading[key] = True
                entry = self._users.peek(key)
            if entry is None:
                continue
            with entry.lock:
                if m.status is Status.DELETED:
                    entry.remove(m.memory_id)
                else:
                    entry.upsert(m)
        if batch.milvus_deletes:
            with self._lock:
                entries = [entry for _, entry in self._users.held()]
            for entry in entries:
                with entry.lock:
                    for mid in batch.milvus_deletes:
                        entry.remove(mid)
