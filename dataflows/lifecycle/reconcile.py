"""巡检 / reconcile: ClickHouse is the record; Milvus and the hot caches follow it.

Three sweeps, each one query per page on each side, all feeding one ``_repair``:

1. ``reconcile:pending`` (Redis): ids whose Milvus write failed after retries.
2. ClickHouse → Milvus: an ACTIVE/ARCHIVED memory without a vector is re-embedded and
   upserted; a Milvus ``status`` that differs from ClickHouse's is rewritten.
3. Milvus → ClickHouse: a vector whose memory is not in ClickHouse (never written, or
   purged) is an orphan and is deleted. DELETED and SUPERSEDED memories keep their
   vectors on purpose (restore, time travel) until the purge removes them; a whole-user
   purge removes them at once, and nothing here brings them back.

Milvus-only repairs cannot conflict with the keyed writer, so they are written directly.
Rows written in the last ``grace_s`` seconds (by their ``version`` stamp) are skipped in
sweep 2: their own Milvus write may still be in flight.

Capacity counters are not stored: the writer derives them from the user's hot index
(``counters_of``). "Recomputing counters" therefore means dropping a user's hot index
when it disagrees with ClickHouse (an old ACTIVE memory it lacks, an ARCHIVED one it
holds) or when a repair touched the user; the next access reloads it from the stores.
Only users cached at that moment are checked (``peek``; it counts as a use for the LRU).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any, cast

import redis

from core.kv_items import record_text
from dataflows.runtime import Runtime
from memstream.schemas.enums import Status
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.tenants import DEFAULT_TENANT, UserKey
from sinks.change_events import milvus_row
from sinks.memory_filter import MemoryFilter
from sinks.memory_store import RECONCILE_KEY

log = logging.getLogger(__name__)
logging.getLogger("pymilvus.client.iterator.query_iterator").setLevel(logging.ERROR)

RECONCILE_GRACE_S = 30.0
# Milvus's largest batch: a Milvus Lite query costs O(collection) whatever its limit, so
# a few big batches beat many small ones (sweep 3 measured ≈15 s per 50k vectors).
MILVUS_BATCH = 16_384
_EMBED_CHUNK = 256


def _milvus_filter(wanted: MemoryFilter) -> str:
    """The Milvus expression for these users (values JSON-quoted; no scope: Milvus rows
    are repaired per memory)."""
    conds = []
    if wanted.users is not None:
        conds.append(f"user_id in {json.dumps([str(u) for u in wanted.users])}")
    if wanted.tenant is not None:
        conds.append(f"tenant_id == {json.dumps(wanted.tenant)}")
    return " and ".join(conds)


def reconcile(
    rt: Runtime,
    users: Iterable[int] | None = None,
    grace_s: float = RECONCILE_GRACE_S,
    page_size: int = 1000,
    pause_s: float = 0.0,
    tenant: str | None = None,
) -> dict[str, int]:
    """Repair drift for every user (or only ``users``, only ``tenant``'s); returns counts
    of what was fixed."""
    wanted = MemoryFilter.of(tenant, users)
    stats: Counter[str] = Counter()
    touched: set[UserKey] = set()
    cutoff = max(0, time.time_ns() - int(grace_s * 1e9))
    _pending(rt, wanted, stats, touched)
    _store_to_milvus(rt, wanted, cutoff, page_size, pause_s, stats, touched)
    _milvus_to_store(rt, wanted, stats, touched)
    if rt.cache.snapshots is not None:  # the stores changed under them: rebuild
        rt.cache.snapshots.drop(touched)
    for key in touched:
        rt.cache.invalidate(key.user_id, tenant=key.tenant)
    stats["caches_invalidated"] = len(touched)
    keys = ("pending", "missing_vectors", "orphans", "status_fixed", "cache_drift")
    return {k: stats[k] for k in (*keys, "caches_invalidated")}


def _pending(rt: Runtime, wanted: MemoryFilter, stats: Counter, touched: set[UserKey]) -> None:
    """Sweep 1. Redis is a cache: unreachable, the other sweeps still find the drift."""
    client = rt.stores.redis.client
    try:
        # decode_responses=True (sinks.redis_store): the members are str
        ids = sorted(cast("set[str]", client.smembers(RECONCILE_KEY)))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            handled = _repair(rt, dict.fromkeys(chunk), wanted, stats, touched)
            if handled:
                client.srem(RECONCILE_KEY, *handled)
                stats["pending"] += len(handled)
    except redis.RedisError as exc:
        log.warning("reconcile queue unavailable", extra={"fields": {"error": str(exc)[:200]}})


def _store_to_milvus(
    rt: Runtime,
    wanted: MemoryFilter,
    cutoff: int,
    page_size: int,
    pause_s: float,
    stats: Counter,
    touched: set[UserKey],
) -> None:
    for rows in rt.memories.live_rows_before(cutoff, wanted, page_size, pause_s):
        ids = [r["memory_id"] for r in rows]
        found = rt.stores.milvus.get(ids, ["memory_id", "status"])
        in_milvus = {m["memory_id"]: m["status"] for m in found}
        suspects: dict[str, UserKey | None] = {
            r["memory_id"]: UserKey(r["tenant_id"], int(r["user_id"]))
            for r in rows
            if in_milvus.get(r["memory_id"]) != r["status"]
        }
        _repair(rt, suspects, wanted, stats, touched)
        for r in rows:  # hot-index drift, only for users cached right now
            key = UserKey(r["tenant_id"], int(r["user_id"]))
            idx = rt.cache.peek(key.user_id, tenant=key.tenant)
            held = idx is not None and r["memory_id"] in idx
            if idx is not None and held != (r["status"] == Status.ACTIVE.value):
                stats["cache_drift"] += int(key not in touched)
                touched.add(key)


def _milvus_to_store(
    rt: Runtime, wanted: MemoryFilter, stats: Counter, touched: set[UserKey]
) -> None:
    mv = rt.stores.milvus
    it = mv.client.query_iterator(
        mv.collection,
        batch_size=MILVUS_BATCH,
        filter=_milvus_filter(wanted),
        output_fields=["memory_id", "user_id", "tenant_id"],
    )
    try:
        while batch := it.next():
            owner = {m["memory_id"]: _milvus_owner(m) for m in batch}
            known = rt.memories.known_ids({k.user_id for k in owner.values()}, list(owner))
            orphans: dict[str, UserKey | None] = {
                mid: u for mid, u in owner.items() if mid not in known
            }
            _repair(rt, orphans, wanted, stats, touched)
    finally:
        it.close()


def _repair(
    rt: Runtime,
    suspects: dict[str, UserKey | None],
    wanted: MemoryFilter,
    stats: Counter,
    touched: set[UserKey],
) -> list[str]:
    """Make Milvus match ClickHouse for ``suspects`` (id → user, None = unknown).

    Returns the ids it settled: all, or only those of ``wanted`` users (plus ids that
    exist nowhere, which need nothing).
    """
    if not suspects:
        return []
    milvus = rt.stores.milvus
    fields = ["memory_id", "user_id", "tenant_id", "status"]
    mv = {m["memory_id"]: m for m in milvus.get(list(suspects), fields)}
    owner = _owners(rt, suspects, mv)
    gone = [i for i in suspects if i not in owner]
    if not wanted.everyone:
        owner = {i: u for i, u in owner.items() if u in wanted}
    if not owner:
        return gone
    records: dict[str, MemoryRecord] = {}
    by_tenant: dict[str, set[int]] = {}
    for key in owner.values():
        by_tenant.setdefault(key.tenant, set()).add(key.user_id)
    for tenant, users in by_tenant.items():
        loaded = rt.memories.load_many(sorted(users), memory_ids=list(owner), tenant=tenant)
        records.update({r.memory_id: r for r in loaded})
    missing = [records[i] for i in owner if i in records and i not in mv]
    full = []
    for start in range(0, len(missing), _EMBED_CHUNK):
        part = missing[start : start + _EMBED_CHUNK]
        vectors = rt.embedder.embed([record_text(r) for r in part])
        full += [
            milvus_row(r, v, rt.memories.blind_tags(r)) for r, v in zip(part, vectors, strict=True)
        ]
    drifted = [r for i, r in records.items() if i in mv and mv[i].get("status") != r.status.value]
    orphans = [i for i in owner if i not in records and i in mv]
    milvus.upsert(full)
    if drifted:
        rows = [milvus_row(r, None, rt.memories.blind_tags(r)) for r in drifted]
        milvus.client.upsert(milvus.collection, rows, partial_update=True)
    milvus.delete(orphans)
    stats["missing_vectors"] += len(full)
    stats["status_fixed"] += len(drifted)
    stats["orphans"] += len(orphans)
    fixed = [*(r.memory_id for r in missing), *(r.memory_id for r in drifted), *orphans]
    touched.update(owner[i] for i in fixed)
    return [*gone, *owner]


def _milvus_owner(row: dict[str, Any]) -> UserKey:
    return UserKey(str(row.get("tenant_id") or DEFAULT_TENANT), int(row["user_id"]))


def _owners(
    rt: Runtime, suspects: dict[str, UserKey | None], mv: dict[str, dict[str, Any]]
) -> dict[str, UserKey]:
    """The user of each suspect: given, else Milvus's row, else ClickHouse's (one query)."""
    owner = {i: u for i, u in suspects.items() if u is not None}
    owner.update({i: _milvus_owner(mv[i]) for i in suspects if i not in owner and i in mv})
    unknown = [i for i in suspects if i not in owner]
    if unknown:
        owner.update(rt.memories.owners(unknown))
    return owner
