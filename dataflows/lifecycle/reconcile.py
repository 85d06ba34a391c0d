"""巡检 / reconcile: ClickHouse is the record; Milvus and the hot caches follow it.

Three sweeps, each one query per page on each side, all feeding one ``_repair``:

1. ``reconcile:pending`` (Redis): ids whose Milvus write failed after retries.
2. ClickHouse → Milvus: an ACTIVE/ARCHIVED memory without a vector is re-embedded and
   upserted; a Milvus ``status`` that differs from ClickHouse's is rewritten.
3. Milvus → ClickHouse: a vector whose memory is not in ClickHouse (never written, or
   purged) is an orphan and is deleted. DELETED and SUPERSEDED memories keep their
   vectors on purpose (restore, time travel) until the purge removes them.

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
from typing import Any

import redis

from dataflows.lifecycle.paging import keyset_pages
from dataflows.runtime import Runtime
from schemas.enums import Status
from sinks.memory_store import RECONCILE_KEY, milvus_row

log = logging.getLogger(__name__)
logging.getLogger("pymilvus.client.iterator.query_iterator").setLevel(logging.ERROR)

RECONCILE_GRACE_S = 30.0
# Milvus's largest batch: a Milvus Lite query costs O(collection) whatever its limit, so
# a few big batches beat many small ones (sweep 3 measured ≈15 s per 50k vectors).
MILVUS_BATCH = 16_384
_EMBED_CHUNK = 256


def reconcile(
    rt: Runtime,
    users: Iterable[int] | None = None,
    grace_s: float = RECONCILE_GRACE_S,
    page_size: int = 1000,
    pause_s: float = 0.0,
) -> dict[str, int]:
    """Repair drift for every user (or only ``users``); returns counts of what was fixed."""
    wanted = None if users is None else set(users)
    stats: Counter[str] = Counter()
    touched: set[int] = set()
    cutoff = max(0, time.time_ns() - int(grace_s * 1e9))
    _pending(rt, wanted, stats, touched)
    _store_to_milvus(rt, wanted, cutoff, page_size, pause_s, stats, touched)
    _milvus_to_store(rt, wanted, stats, touched)
    for user_id in touched:
        rt.cache.invalidate(user_id)
    stats["caches_invalidated"] = len(touched)
    keys = ("pending", "missing_vectors", "orphans", "status_fixed", "cache_drift")
    return {k: stats[k] for k in (*keys, "caches_invalidated")}


def _pending(rt: Runtime, wanted: set[int] | None, stats: Counter, touched: set[int]) -> None:
    """Sweep 1. Redis is a cache: unreachable, the other sweeps still find the drift."""
    client = rt.stores.redis.client
    try:
        ids = sorted(client.smembers(RECONCILE_KEY))
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
    wanted: set[int] | None,
    cutoff: int,
    page_size: int,
    pause_s: float,
    stats: Counter,
    touched: set[int],
) -> None:
    where = "status IN ('ACTIVE', 'ARCHIVED') AND version < {cutoff:UInt64}"
    params: dict[str, Any] = {"cutoff": cutoff}
    if wanted is not None:
        where += " AND user_id IN {users:Array(UInt64)}"
        params["users"] = sorted(wanted)
    ch = rt.stores.clickhouse
    for rows in keyset_pages(ch, "user_id, memory_id, status", where, params, page_size, pause_s):
        ids = [r["memory_id"] for r in rows]
        found = rt.stores.milvus.get(ids, ["memory_id", "status"])
        in_milvus = {m["memory_id"]: m["status"] for m in found}
        suspects = {
            r["memory_id"]: int(r["user_id"])
            for r in rows
            if in_milvus.get(r["memory_id"]) != r["status"]
        }
        _repair(rt, suspects, wanted, stats, touched)
        for r in rows:  # hot-index drift, only for users cached right now
            idx = rt.cache.peek(int(r["user_id"]))
            held = idx is not None and r["memory_id"] in idx
            if idx is not None and held != (r["status"] == Status.ACTIVE.value):
                stats["cache_drift"] += int(idx.user_id not in touched)
                touched.add(idx.user_id)


def _milvus_to_store(
    rt: Runtime, wanted: set[int] | None, stats: Counter, touched: set[int]
) -> None:
    mv = rt.stores.milvus
    expr = "" if wanted is None else f"user_id in {json.dumps([str(u) for u in sorted(wanted)])}"
    it = mv.client.query_iterator(
        mv.collection, batch_size=MILVUS_BATCH, filter=expr, output_fields=["memory_id", "user_id"]
    )
    try:
        while batch := it.next():
            owner = {m["memory_id"]: int(m["user_id"]) for m in batch}
            rows = rt.stores.clickhouse.query(
                f"SELECT memory_id FROM {rt.stores.clickhouse.database}.memories FINAL "
                "WHERE user_id IN {u:Array(UInt64)} AND memory_id IN {ids:Array(String)}",
                {"u": sorted(set(owner.values())), "ids": list(owner)},
            )
            known = {r[0] for r in rows}
            orphans = {mid: u for mid, u in owner.items() if mid not in known}
            _repair(rt, orphans, wanted, stats, touched)
    finally:
        it.close()


def _repair(
    rt: Runtime,
    suspects: dict[str, int | None],
    wanted: set[int] | None,
    stats: Counter,
    touched: set[int],
) -> list[str]:
    """Make Milvus match ClickHouse for ``suspects`` (id → user, None = unknown).

    Returns the ids it settled: all, or only those of ``wanted`` users (plus ids that
    exist nowhere, which need nothing).
    """
    if not suspects:
        return []
    milvus = rt.stores.milvus
    mv = {m["memory_id"]: m for m in milvus.get(list(suspects), ["memory_id", "user_id", "status"])}
    owner = _owners(rt, suspects, mv)
    gone = [i for i in suspects if i not in owner]
    if wanted is not None:
        owner = {i: u for i, u in owner.items() if u in wanted}
    if not owner:
        return gone
    loaded = rt.memories.load_many(sorted(set(owner.values())), memory_ids=list(owner))
    records = {r.memory_id: r for r in loaded}
    missing = [records[i] for i in owner if i in records and i not in mv]
    full = []
    for start in range(0, len(missing), _EMBED_CHUNK):
        part = missing[start : start + _EMBED_CHUNK]
        vectors = rt.embedder.embed([r.content for r in part])
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


def _owners(
    rt: Runtime, suspects: dict[str, int | None], mv: dict[str, dict[str, Any]]
) -> dict[str, int]:
    """The user of each suspect: given, else Milvus's row, else ClickHouse's (one query)."""
    owner = {i: u for i, u in suspects.items() if u is not None}
    owner.update({i: int(mv[i]["user_id"]) for i in suspects if i not in owner and i in mv})
    unknown = [i for i in suspects if i not in owner]
    if unknown:
        rows = rt.stores.clickhouse.query(
            f"SELECT memory_id, any(user_id) FROM {rt.stores.clickhouse.database}.memories "
            "WHERE memory_id IN {ids:Array(String)} GROUP BY memory_id",
            {"ids": unknown},
        )
        owner.update({mid: int(u) for mid, u in rows})
    return owner
