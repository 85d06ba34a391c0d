"""Per-user Redis snapshots (sinks.user_snapshot) against the real Redis and stores:
rebuilt when missing, kept current by the writer, never read stale, gone after a purge."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import numpy as np
import pytest

from core.settings import Settings
from core.write_batch import WriteBatch
from memstream.schemas.enums import Status
from memstream.schemas.tenants import DEFAULT_TENANT, UserKey
from sinks.crypto import DecryptionError
from sinks.hot_cache import HotCache
from sinks.redis_store import RedisStore
from sinks.user_snapshot import UserSnapshots
from tests.helpers.lifecycle import T0, record, seed

pytestmark = pytest.mark.integration

TEXTS = [
    "I am allergic to peanuts",
    "My sister Ana lives in Lisbon",
    "打车时喜欢安静的车，不要放音乐",
    "住在深圳南山区",
    "I drink my coffee black",
]


def _cache(runtime) -> HotCache:
    """A fresh cache over the session's stores and snapshots, whose listener the session's
    runtime subscribed (this cache mirrors no write: the tests clear it before a get)."""
    assert runtime.cache.snapshots is not None  # on by default
    return HotCache(
        runtime.memories, runtime.settings.embedding_dim, 1 << 26, 2, runtime.cache.snapshots
    )


def _ranked(cache: HotCache, user_id: int, qvec: np.ndarray) -> list[tuple[str, float]]:
    idx = cache.get(user_id, tenant=DEFAULT_TENANT)
    with idx.lock:
        return idx.dense(qvec, 10)


def _same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> bool:
    """The same ids in the same order, cosines equal up to 1e-5 (BLAS may sum in another
    order when a matrix lies at another alignment: ~1e-7)."""
    return [m for m, _ in got] == [m for m, _ in want] and all(
        abs(a - b) <= 1e-5 for (_, a), (_, b) in zip(got, want, strict=True)
    )


def _snap(runtime, user_id: int) -> dict[bytes, bytes]:
    key = UserSnapshots.snap_key(UserKey(DEFAULT_TENANT, user_id))
    return runtime.stores.redis.raw.hgetall(key)


def _contents(cache: HotCache, user_id: int) -> dict[str, str]:
    cache.clear()
    idx = cache.get(user_id, tenant=DEFAULT_TENANT)
    return {m: r.content for m, r in idx.records.items()}


def test_a_missing_snapshot_is_rebuilt_and_then_loads_the_same_ranking(runtime, user_id):
    records = seed(runtime, *(record(user_id, t) for t in TEXTS))
    cache = _cache(runtime)
    qvec = runtime.embedder.embed_query("what can't I eat?")
    assert not _snap(runtime, user_id)
    from_stores = _ranked(cache, user_id, qvec)  # cold: the stores, then saved
    assert cache.snapshot_loads == 0 and len(from_stores) == len(records)
    held = _snap(runtime, user_id)
    assert sum(k.startswith(b"r:") for k in held) == len(records) and b"_gen" in held
    assert not any(t.encode() in v for v in held.values() for t in TEXTS)  # sealed

    cache.clear()
    from_snapshot = _ranked(cache, user_id, qvec)
    assert cache.snapshot_loads == 1
    assert _same(from_snapshot, from_stores)  # the same float16 rows: same order and scores
    hot = HotCache(runtime.memories, runtime.settings.embedding_dim, 1 << 26)
    vectors = runtime.embedder.embed([r.content for r in records])
    idx = hot.get(user_id, tenant=DEFAULT_TENANT)
    for r, v in zip(records, vectors, strict=True):
        idx.upsert(r, v)  # as a write makes them: straight from the embedder
    assert _same(idx.dense(qvec, 10), from_stores)


def test_the_writer_keeps_the_snapshot_current(runtime, user_id):
    first, second = seed(runtime, record(user_id, TEXTS[0]), record(user_id, TEXTS[1]))
    cache = _cache(runtime)
    cache.get(user_id, tenant=DEFAULT_TENANT)  # builds the snapshot
    loads = cache.snapshot_loads

    added = seed(runtime, record(user_id, TEXTS[3]))[0]
    assert _contents(cache, user_id) == {
        first.memory_id: TEXTS[0], second.memory_id: TEXTS[1], added.memory_id: TEXTS[3],
    }  # fmt: skip
    assert cache.snapshot_loads == loads + 1  # patched, not rebuilt

    later = T0 + timedelta(minutes=5)
    edited = dataclasses.replace(first, content=TEXTS[4], updated_at=later)
    vec = runtime.embedder.embed([TEXTS[4]])[0]
    runtime.memories.write(WriteBatch(memories=[edited], vectors={first.memory_id: vec}))
    weighed = dataclasses.replace(second, weight=0.42, weight_at=later)  # no new vector
    runtime.memories.write(WriteBatch(memories=[weighed]))
    gone = dataclasses.replace(added, status=Status.DELETED, deleted_at=later)
    runtime.memories.write(WriteBatch(memories=[gone], milvus_deletes=[added.memory_id]))

    assert _contents(cache, user_id) == {first.memory_id: TEXTS[4], second.memory_id: TEXTS[1]}
    idx = cache.get(user_id, tenant=DEFAULT_TENANT)
    assert idx.records[second.memory_id].weight == pytest.approx(0.42)
    assert cache.snapshot_loads == loads + 2
    np.testing.assert_allclose(
        idx.vector(first.memory_id), vec / np.linalg.norm(vec), atol=2e-3
    )  # the new row came with the patch


def test_a_save_from_before_a_write_is_refused(runtime, user_id):
    seed(runtime, record(user_id, TEXTS[0]))
    cache = _cache(runtime)
    key = UserKey(DEFAULT_TENANT, user_id)
    snaps, gens = cache.snapshots.read([key])
    assert not snaps and key in gens
    stale = cache._from_stores(DEFAULT_TENANT, [user_id])[0][key]  # what a slow loader read
    seed(runtime, record(user_id, TEXTS[1]))  # a write lands meanwhile: the generation moves
    assert cache.snapshots.save(key, gens[key], stale) is False
    assert not _snap(runtime, user_id)
    assert len(_contents(cache, user_id)) == 2  # the next load reads the stores


def test_a_restored_memory_without_its_row_drops_the_snapshot(runtime, user_id):
    kept, archived = seed(
        runtime, record(user_id, TEXTS[0]), record(user_id, TEXTS[1], status=Status.ARCHIVED)
    )
    cache = _cache(runtime)
    idx = cache.get(user_id, tenant=DEFAULT_TENANT)
    assert idx.dormant == {archived.content_hash: archived.memory_id}
    assert any(k.startswith(b"d:") for k in _snap(runtime, user_id))
    cache.clear()
    assert cache.get(user_id, tenant=DEFAULT_TENANT).dormant == idx.dormant  # from the snapshot

    back = dataclasses.replace(archived, status=Status.ACTIVE, archived_at=None)
    runtime.memories.write(WriteBatch(memories=[back]))  # a restore: no vector in the batch
    assert not _snap(runtime, user_id)
    assert set(_contents(cache, user_id)) == {kept.memory_id, archived.memory_id}


def test_a_purged_users_snapshot_is_gone_and_its_copies_do_not_open(runtime, user_id):
    seed(runtime, record(user_id, TEXTS[0]), record(user_id, TEXTS[2]))
    cache = _cache(runtime)
    key = UserKey(DEFAULT_TENANT, user_id)
    cache.get(user_id, tenant=DEFAULT_TENANT)
    copied = _snap(runtime, user_id)  # e.g. an RDB dump of Redis taken before the purge
    assert copied
    runtime.memories.write(WriteBatch(shred_users=[key]))
    assert not _snap(runtime, user_id)
    sealed = [v for k, v in copied.items() if k != b"_gen"]
    for value in sealed:
        with pytest.raises(DecryptionError):
            cache.snapshots._unseal(key, value)


def test_no_redis_reads_no_snapshot_and_drops_the_pending_later(runtime, user_id):
    down = RedisStore("redis://127.0.0.1:1/0", socket_timeout=0.2)  # nothing listens there
    down.setup()
    snaps = UserSnapshots(down, runtime.memories.cipher, runtime.settings.embedding_dim, 60)
    key = UserKey(DEFAULT_TENANT, user_id)
    assert snaps.read([key]) == ({}, {})
    snaps.run({key: None})
    assert snaps._pending == {key}  # retried (as a drop) before its next read or patch

    cache = _cache(runtime)
    seed(runtime, record(user_id, TEXTS[0]))
    cache.get(user_id, tenant=DEFAULT_TENANT)
    assert _snap(runtime, user_id)
    up = UserSnapshots(runtime.stores.redis, runtime.memories.cipher, 384, 60)
    up._pending = {key}
    found, gens = up.read([key])  # the pending drop runs first: a miss
    assert found == {} and key in gens
    assert not _snap(runtime, user_id)


def test_snapshots_are_off_with_a_zero_ttl() -> None:
    assert Settings().hot_snapshot_ttl_s > 0
    assert Settings(hot_snapshot_ttl_s=0).hot_snapshot_ttl_s == 0
