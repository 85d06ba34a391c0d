"""The per-user hot cache: UserIndex objects loaded on first touch, LRU by memory budget.

Filled from the user's Redis snapshot (``sinks.user_snapshot``: one read) when there is a
valid one, else from ClickHouse (records) and Milvus (vectors), after which the snapshot
is saved for the next process or the next time; kept current by the write listener of
:class:`sinks.memory_store.MemoryStore` in-process and by ``memory.changes`` across
processes (``invalidate``). ACTIVE memories live here, and beside them (``UserIndex.paged``)
the user's paged-out ones (``core.capacity.paged_out``: evicted for room, still found by
default recall) when the cache has ``settings`` to apply that rule; the rest of the
archive and time travel go to Milvus. Caches are derivable, so nothing here is in a Bytewax snapshot.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from core import metrics, record_codec
from core.capacity import paged_out
from core.lexical import indexed_text, term_counts
from core.settings import Settings
from core.user_index import UserIndex
from core.write_batch import WriteBatch
from memstream.schemas.enums import APART_TYPES, DERIVED_TYPES, KEYED_TYPES, MemType, Status
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.tenants import UserKey
from sinks.memory_store import MemoryStore
from sinks.user_snapshot import Snapshot, UserSnapshots

_P_ID, _P_STATUS = record_codec.POS["memory_id"], record_codec.POS["status"]


def _pager(settings: Settings) -> Callable[[MemoryRecord], bool]:
    """``core.capacity.paged_out`` at the moment of the call, with these settings."""

    def pages(m: MemoryRecord) -> bool:
        return paged_out(m, datetime.now(UTC), settings)

    return pages


class HotCache:
    def __init__(
        self,
        store: MemoryStore,
        dim: int,
        budget_bytes: int,
        max_loads: int = 2,
        snapshots: UserSnapshots | None = None,
        settings: Settings | None = None,
    ):
        self.store = store
        self.snapshots = snapshots
        # the archive threshold and decay of ``paged_out``; None: no paged-out memories
        self.settings = settings
        self.dim = dim
        self.budget = budget_bytes
        # keyed by (tenant, user): user 42 of two tenants is two people. Not cachetools: a
        # write resizes a held user in place (it sizes once, at insert); one load per user
        self._users: OrderedDict[UserKey, UserIndex] = OrderedDict()
        # Each held user's footprint when last measured, and their sum: the budget check
        # after a load is O(1). Summing ``nbytes`` over the users instead cost ~2.4 µs a
        # user with ``_lock`` held — ~6 ms at the default budget's ~2,600 users, during
        # which every recall's lookup waited (under ``_lock``).
        self._sizes: dict[UserKey, int] = {}
        self._held = 0
        self._lock = threading.Lock()
        self._loading: dict[UserKey, threading.Lock] = {}
        self._stale: set[UserKey] = set()  # invalidated while a load was in flight
        self._warming: set[UserKey] = set()
        self.hits = 0
        self.misses = 0
        self.snapshot_loads = 0  # users loaded from their Redis snapshot
        self.load_ms: deque[float] = deque(maxlen=100_000)  # recent cold loads (get), ms
        # At most ``max_loads`` cold loads at once: a storm of cold users queues here and
        # leaves the recall pool's other threads (and the cores) to the cached ones.
        self._load_slots = threading.BoundedSemaphore(max_loads)

    @classmethod
    def attach(
        cls,
        store: MemoryStore,
        dim: int,
        budget_mb: int,
        max_loads: int = 2,
        snapshot_ttl_s: int | None = None,
        settings: Settings | None = None,
    ) -> HotCache:
        """A cache kept current by ``store``'s write listener (how every process builds
        it); with ``snapshot_ttl_s``, backed by Redis snapshots that the same store's
        writes keep current (None: no snapshots)."""
        snapshots = None
        pages = None if settings is None else _pager(settings)
        if snapshot_ttl_s is not None:
            snapshots = UserSnapshots(
                store.stores.redis, store.cipher, dim, snapshot_ttl_s, pages=pages
            )
            store.subscribe(snapshots.apply)
        cache = cls(store, dim, budget_mb * 1024 * 1024, max_loads, snapshots, settings)
        store.subscribe(cache.apply)
        return cache

    @classmethod
    def from_settings(cls, store: MemoryStore, settings: Settings) -> HotCache:
        """:meth:`attach` with the process's settings (``hot_cache_*``, snapshots off
        when ``hot_snapshot_ttl_s`` is 0): how the node and an API process build it."""
        return cls.attach(
            store,
            settings.embedding_dim,
            settings.hot_cache_budget_mb,
            settings.hot_cache_max_loads,
            settings.hot_snapshot_ttl_s or None,
            settings,
        )

    def __len__(self) -> int:
        return len(self._users)

    @property
    def nbytes(self) -> int:
        """The held users' footprint, as the budget counts it."""
        with self._lock:
            return self._held

    @property
    def paged_held(self) -> int:
        """Paged-out memories held, over every user (a bench figure)."""
        with self._lock:
            held = list(self._users.values())
        return sum(len(idx.paged) for idx in held if idx.paged is not None)

    def peek(self, user_id: int, *, tenant: str) -> UserIndex | None:
        return self._peek(UserKey(tenant, user_id))

    def lookup(self, user_id: int, *, tenant: str) -> UserIndex | None:
        """``peek`` for a reader (recall): a cached user counts in ``hits``; on None the
        reader calls ``get``, which counts the miss and loads."""
        idx = self._peek(UserKey(tenant, user_id))
        if idx is not None:
            self.hits += 1
            metrics.HOT_HIT.inc()
        return idx

    def _peek(self, key: UserKey) -> UserIndex | None:
        with self._lock:
            idx = self._users.get(key)
            if idx is not None:
                self._users.move_to_end(key)
            return idx

    def get(self, user_id: int, *, tenant: str) -> UserIndex:
        """The user's index, loading it from the stores on a miss (one loader per user)."""
        key = UserKey(tenant, user_id)
        idx = self._peek(key)
        if idx is not None:
            self.hits += 1
            metrics.HOT_HIT.inc()
            return idx
        with self._lock:
            loader = self._loading.setdefault(key, threading.Lock())
        with loader:
            idx = self._peek(key)
            if idx is None:
                self.misses += 1
                metrics.HOT_MISS.inc()
                started = time.perf_counter()  # the wait for a slot counts: a reader waits
                with self._load_slots:
                    idx = self._load_many([key])[key]
                self.load_ms.append((time.perf_counter() - started) * 1000)
                with self._lock:
                    if self._keep(key):
                        self._hold(key, idx)
                        self._evict()
        with self._lock:
            self._loading.pop(key, None)
        return idx

    def _load_many(self, keys: list[UserKey]) -> dict[UserKey, UserIndex]:
        """Indexes for several users: per tenant, one ClickHouse query and one Milvus read."""
        tenants: dict[str, list[int]] = {}
        for k in keys:
            tenants.setdefault(k.tenant, []).append(k.user_id)
        out: dict[UserKey, UserIndex] = {}
        for tenant, user_ids in tenants.items():
            out.update(self._load_tenant(tenant, user_ids))
        return out

    def _load_tenant(self, tenant: str, user_ids: list[int]) -> dict[UserKey, UserIndex]:
        keys = [UserKey(tenant, u) for u in user_ids]
        snaps, gens = self.snapshots.read(keys) if self.snapshots is not None else ({}, {})
        out = {k: self._from_snapshot(k, snap) for k, snap in snaps.items()}
        self.snapshot_loads += len(out)
        metrics.HOT_LOAD_SNAPSHOT.inc(len(out))
        missing = [k.user_id for k in keys if k not in out]
        if missing:
            loaded, terms = self._from_stores(tenant, missing)
            metrics.HOT_LOAD_STORES.inc(len(loaded))
            if self.snapshots is not None:
                for key, idx in loaded.items():
                    self.snapshots.save(key, gens.get(key), idx, terms)
            out.update(loaded)
        return out

    def _from_snapshot(self, key: UserKey, snap: Snapshot) -> UserIndex:
        idx = UserIndex(key.user_id, self.dim, capacity=max(64, len(snap.records)),
                        tenant=key.tenant)  # fmt: skip
        idx.dormant = snap.dormant
        kept = [r for r in snap.records if r[1][_P_ID] in snap.rows]  # no row: not searchable
        active = [r for r in kept if r[1][_P_STATUS] == Status.ACTIVE.value]
        idx.fill(active, b"".join(snap.rows[vals[_P_ID]] for _, vals, _ in active))
        if len(active) < len(kept) and self.settings is not None:
            pages = _pager(self.settings)
            paged = [
                r for r in kept
                if r[1][_P_STATUS] == Status.ARCHIVED.value and pages(record_codec.build(r[1]))
            ]  # fmt: skip
            if paged:
                idx.paged_index().fill(
                    paged, b"".join(snap.rows[vals[_P_ID]] for _, vals, _ in paged)
                )
        return idx

    def _from_stores(
        self, tenant: str, user_ids: list[int]
    ) -> tuple[dict[UserKey, UserIndex], dict[str, dict[str, int]]]:
        """The users' indexes, and every loaded memory's term counts (for the snapshot)."""
        # every kind but the items: the profiles (derived, never searched) are followed
        # beside the index; the items are read by the writer when it first needs them
        # (``UserIndex.items``), so a recall's cold load never decrypts them
        kinds = [t for t in MemType if t not in KEYED_TYPES]
        if self.settings is None:
            records = self.store.load_many(
                user_ids, statuses=[Status.ACTIVE], tenant=tenant, mem_types=kinds
            )
        else:  # and the paged-out ones (those whose stored weight is above the threshold)
            records = self.store.load_many(
                user_ids,
                statuses=[Status.ACTIVE, Status.ARCHIVED],
                archived_above=self.settings.archive_threshold,
                tenant=tenant,
                mem_types=kinds,
            )
            pages = _pager(self.settings)
            records = [r for r in records if r.status is Status.ACTIVE or pages(r)]
        derived: dict[int, dict[str, MemoryRecord]] = {u: {} for u in user_ids}
        for r in records:
            if r.mem_type in DERIVED_TYPES:
                derived[r.user_id][r.memory_id] = r
        records = [r for r in records if r.mem_type not in APART_TYPES]
        vectors = self.store.vectors([r.memory_id for r in records]) if records else {}
        dormant = self.store.archived_hashes(user_ids, tenant=tenant)
        by_user: dict[int, list] = {u: [] for u in user_ids}
        for r in records:
            by_user[r.user_id].append(r)
        out = {}
        terms: dict[str, dict[str, int]] = {}
        for user_id, recs in by_user.items():
            idx = UserIndex(user_id, self.dim, capacity=max(64, len(recs)), tenant=tenant)
            idx.dormant = dormant.get(user_id, {})
            idx.derived = derived[user_id]
            for r in recs:
                vec = vectors.get(r.memory_id)
                if vec is not None:  # missing vectors are the reconcile pass's to repair
                    counts = terms[r.memory_id] = term_counts(indexed_text(r.content, r.entities))
                    into = idx if r.status is Status.ACTIVE else idx.paged_index()
                    into.upsert(r, vec, counts)
            out[UserKey(tenant, user_id)] = idx
        return out, terms

    def _pages(self, m: MemoryRecord) -> bool:
        return self.settings is not None and _pager(self.settings)(m)

    @staticmethod
    def _page_out(idx: UserIndex, m: MemoryRecord, vec: np.ndarray | None) -> None:
        """Under ``idx.lock``: hold ``m`` (paged out) in ``idx.paged``: moved from the
        ACTIVE rows (an eviction), or updated in place; without a row to keep, gone."""
        if not idx.page_out(m):
            idx.paged_index().upsert(m, vec)  # vec None and not held: nothing to search

    def warm(self, keys: list[UserKey]) -> None:
        """Load every user not cached yet in one round trip per store (batch prefetch)."""
        with self._lock:
            missing = sorted({UserKey(*k) for k in keys if k not in self._users})
            self._warming.update(missing)
        if not missing:
            return
        try:
            loaded = self._load_many(missing)
        except BaseException:
            with self._lock:
                self._warming.difference_update(missing)
            raise
        with self._lock:  # one block: an invalidation cannot slip between the two steps
            self._warming.difference_update(missing)
            for key, idx in loaded.items():
                if self._keep(key) and key not in self._users:
                    self._hold(key, idx)
            self._evict()

    def _keep(self, key: UserKey) -> bool:
        """Under the lock, after a load: False (and forgotten) if it went stale meanwhile."""
        if key in self._stale:
            self._stale.discard(key)
            return False
        return True

    def _hold(self, key: UserKey, idx: UserIndex) -> None:
        """Under the lock: keep ``idx`` as the user's index (most recently used)."""
        self._drop(key)
        self._users[key] = idx
        self._sizes[key] = idx.nbytes
        self._held += self._sizes[key]

    def _drop(self, key: UserKey) -> None:
        """Under the lock: forget the user, if held."""
        if self._users.pop(key, None) is not None:
            self._held -= self._sizes.pop(key)

    def _resized(self, key: UserKey, idx: UserIndex, nbytes: int) -> None:
        """After a write changed a held user in place (measured under ``idx.lock``):
        count the new footprint and evict if the cache is now over its budget."""
        with self._lock:
            if self._users.get(key) is idx:  # not dropped or reloaded meanwhile
                self._held += nbytes - self._sizes[key]
                self._sizes[key] = nbytes
                self._evict()

    def _evict(self) -> None:
        """Least recently used first, until within the budget: a user larger than the
        whole budget is served from the load that fetched it and not kept."""
        while self._held > self.budget and self._users:
            key, _ = self._users.popitem(last=False)
            self._held -= self._sizes.pop(key)
            metrics.HOT_EVICTIONS.inc()

    def clear(self) -> None:
        """Forget every user (they reload from the stores on next touch)."""
        with self._lock:
            self._users.clear()
            self._sizes.clear()
            self._held = 0
            self._stale.update(self._loading, self._warming)

    def invalidate(self, user_id: int, *, tenant: str) -> None:
        """Drop the user; a load of theirs in flight is served once but not kept."""
        key = UserKey(tenant, user_id)
        with self._lock:
            self._drop(key)
            if key in self._loading or key in self._warming:
                self._stale.add(key)

    def refresh(self, user_id: int, memory_id: str, fields: dict[str, Any], *, tenant: str) -> bool:
        """Patch a held memory's weight fields in place; False when that cannot be done.

        For followers of ``memory.changes``: weight recovery changes neither text nor
        status, so a reload of the whole user would be waste. ``fields`` also names the
        writer's ``status`` and stored (keyed) ``content_hash``; if either differs from the held copy (or
        the memory is not held) the answer is False and the caller reloads the user.
        Weights that would move the record back in time (a late event) are ignored.
        """
        idx = self.peek(user_id, tenant=tenant)
        if idx is None:
            return True  # nothing held: the next load reads the stores
        weights = {k: v for k, v in fields.items() if k not in ("status", "content_hash")}
        with idx.lock:
            rec = idx.records.get(memory_id)
            if (
                rec is None
                or str(rec.status) != fields.get("status")
                or self.store.stored_hash(rec) != fields.get("content_hash")
            ):
                return False
            if weights["weight_at"] < rec.weight_at:
                return True
            idx.upsert(dataclasses.replace(rec, **weights), None)
            nbytes = idx.nbytes
        self._resized(UserKey(tenant, user_id), idx, nbytes)
        return True

    def apply(self, batch: WriteBatch) -> None:
        """Write listener: mirror an applied batch into the users we hold."""
        touched = {UserKey(m.tenant_id, m.user_id) for m in batch.memories}
        with self._lock:  # a load in flight may have read the stores before this write
            self._stale.update(u for u in touched if u in self._loading or u in self._warming)
        changed: dict[UserKey, UserIndex] = {}
        for m in batch.memories:
            key = UserKey(m.tenant_id, m.user_id)
            idx = self._peek(key)
            if idx is None:
                continue
            with idx.lock:
                if m.mem_type in DERIVED_TYPES:  # a profile: followed, never searched
                    idx.note_derived(m)
                    continue
                if m.mem_type in KEYED_TYPES:  # an item: followed, never searched
                    idx.note_item(m)
                    changed[key] = idx  # its held items count in its size
                    continue
                idx.note_status(m)
                vec = batch.vectors.get(m.memory_id)
                if m.status is Status.ACTIVE and m.invalid_at is None:
                    if m.memory_id not in idx:  # a paged-out one ACTIVE again keeps its row
                        idx.page_in(m)
                    if vec is None and m.memory_id not in idx:
                        # e.g. a restore: reload with its vector
                        self.invalidate(m.user_id, tenant=m.tenant_id)
                        continue
                    idx.upsert(m, vec)
                elif self._pages(m):  # evicted for room: paged out, not gone
                    self._page_out(idx, m, vec)
                else:
                    idx.remove(m.memory_id)
            changed[key] = idx
        mirrored = {m.memory_id for m in batch.memories}  # a purge's: removed just above
        for mid in batch.milvus_deletes:
            if mid in mirrored:
                continue
            with self._lock:  # a lifecycle purge names ids only: whoever holds them
                holders = [(k, i) for k, i in self._users.items() if i.holds(mid)]
            for key, idx in holders:
                with idx.lock:
                    idx.remove(mid)
                changed[key] = idx
        for key, idx in changed.items():
            with idx.lock:
                nbytes = idx.nbytes
            self._resized(key, idx, nbytes)
        for mid in batch.purge_ids:
            with self._lock:
                held = list(self._users.values())
            for idx in held:
                with idx.lock:
                    idx.forget_dormant(mid)
