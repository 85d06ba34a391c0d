"""Data keys in ClickHouse: created once, cached with a bound, destroyed, re-wrapped."""

from __future__ import annotations

import threading

import pytest

from sinks.crypto import KeyDestroyed, LegacyCipher
from sinks.keyring import KeyRing
from sinks.master_key import LocalMasterKey

pytestmark = pytest.mark.integration


def _ring(stores, secret: bytes, previous=(), **kw) -> KeyRing:
    return KeyRing(
        stores.clickhouse,
        LocalMasterKey(secret),
        [LocalMasterKey(p) for p in previous],
        LegacyCipher(secret),
        **kw,
    )


def test_another_process_opens_what_one_sealed_until_the_user_is_destroyed(stores, user_id):
    a, b = _ring(stores, b"master-1"), _ring(stores, b"master-1")
    blob = a.encrypt(user_id, "zq secret")
    assert b.decrypt(user_id, blob) == "zq secret"  # found in ClickHouse, unwrapped
    assert a.destroy(user_id) == 1
    with pytest.raises(KeyDestroyed):
        a.decrypt(user_id, blob)
    b.forget(user_id)  # (otherwise within ttl_s)
    with pytest.raises(KeyDestroyed):
        b.decrypt(user_id, blob)
    assert b.open(user_id, blob) == ""
    fresh = a.encrypt(user_id, "after the purge")  # a new key for new data
    assert a.decrypt(user_id, fresh) == "after the purge"


def test_v1_blobs_of_the_old_single_key_still_read(stores, user_id):
    ring = _ring(stores, b"master-legacy")
    old = LegacyCipher(b"master-legacy").encrypt("written before v2")
    assert ring.decrypt(user_id, old) == "written before v2"


def test_rotation_rewraps_without_touching_content(stores, user_id):
    old = _ring(stores, b"rot-old")
    blob = old.encrypt(user_id, "kept across rotation")
    new = _ring(stores, b"rot-new", previous=[b"rot-old"])
    assert new.rewrap_all() >= 1
    only_new = _ring(stores, b"rot-new")  # the old master is gone now
    assert only_new.decrypt(user_id, blob) == "kept across rotation"
    db = stores.clickhouse.database
    masters = stores.clickhouse.query(
        f"SELECT DISTINCT master_id FROM {db}.data_keys FINAL WHERE user_id = {{u:UInt64}}",
        {"u": user_id},
    )
    assert masters == [(LocalMasterKey(b"rot-new").key_id,)]


def test_the_cache_is_bounded(stores, user_id):
    ring = _ring(stores, b"master-cache", cache_size=3)
    for u in range(user_id, user_id + 10):
        ring.encrypt(u, "x")
    assert len(ring._cache) == 3


def test_a_window_snapshot_restores_sealed_and_comes_back_empty_once_shredded(stores, user_id):
    from dataflows.ingest.items import Incoming, Source
    from dataflows.ingest.window import SealedWindow, SessionWindow
    from memstream.schemas.events import ConversationEvent

    ring = _ring(stores, b"master-window")
    event = ConversationEvent(user_id=user_id, messages=[{"role": "user", "content": "zqwin"}])
    win = SessionWindow(None, 60, 100, 5, ring)
    win.on_item(Incoming(event, "t1", Source("memory.conversations", 0, 0, None, b"zqwin raw")))
    snap = win.snapshot()
    assert isinstance(snap, SealedWindow) and "zqwin" not in snap.blob
    restored = SessionWindow(snap, 60, 100, 5, ring)
    assert restored.state.pending[0].event.messages[0].content == "zqwin"
    ring.destroy(user_id)
    assert SessionWindow(snap, 60, 100, 5, ring).state.pending == []


def test_a_purge_between_load_and_use_does_not_fail_the_write(stores, user_id):
    """A purge in another thread drops the cached entry the moment it is published
    (the soak's update-racing-purge); the write still seals, with a key that exists."""
    ring = _ring(stores, b"master-race")
    load = ring._load

    def load_then_purged(users, tenant):
        loaded = load(users, tenant)
        ring.forget(user_id)  # what a concurrent purge's destroy does
        return loaded

    ring._load = load_then_purged
    blob = ring.encrypt(user_id, "sealed while a purge ran")
    ring._load = load
    assert ring.decrypt(user_id, blob) == "sealed while a purge ran"


def test_a_key_erased_by_a_concurrent_purge_is_replaced_before_use(stores, user_id):
    ring = _ring(stores, b"master-race")
    insert, erased = ring._insert, []

    def insert_then_destroyed(rows):
        insert(rows)
        if not erased:  # the purge's ALTER DELETE lands between insert and read-back
            erased.append(ring.destroy(user_id))

    ring._insert = insert_then_destroyed
    blob = ring.encrypt(user_id, "outlives the purge")
    assert erased == [1]
    assert ring.decrypt(user_id, blob) == "outlives the purge"


def test_prefetch_with_create_gives_every_keyless_user_one_key_in_one_insert(stores, user_id):
    ring = _ring(stores, b"master-batch")
    users = [user_id, user_id + 1, user_id + 2]
    first = ring.current(user_id)  # this one has a key already: kept
    inserts = []
    insert = ring._insert
    ring._insert = lambda rows: (inserts.append(len(rows)), insert(rows))
    ring.prefetch(users, create=True)
    assert inserts == [2]
    assert ring.current(user_id).key_id == first.key_id
    other = _ring(stores, b"master-batch")  # another process finds the same keys
    for u in users:
        blob = ring.encrypt(u, f"secret of {u}")
        assert other.decrypt(u, blob) == f"secret of {u}"
    ring.prefetch(users, create=True)
    assert inserts == [2]  # nothing more to create


def test_refresh_rereads_old_entries_and_a_destroyed_key_leaves_with_them(
    stores, user_id, monkeypatch
):
    a, b = _ring(stores, b"master-refresh"), _ring(stores, b"master-refresh")
    users = [user_id, user_id + 1, user_id + 2]
    blobs = {u: a.encrypt(u, f"sealed for {u}") for u in users}
    for u in users:
        assert b.decrypt(u, blobs[u]) == f"sealed for {u}"  # b caches all three
    order = list(b._cache)
    stamps = {k: e.loaded_at for k, e in b._cache.items()}
    (kept,) = b._cache[("default", user_id + 2)].keys.values()
    queries = []
    query = stores.clickhouse.query

    me = threading.get_ident()

    def counted(sql, params=None):
        if threading.get_ident() == me:  # the session's other rings refresh on threads of theirs
            queries.append(sql)
        return query(sql, params)

    monkeypatch.setattr(stores.clickhouse, "query", counted)
    assert b.refresh(older_than_s=3600) == 0 and queries == []  # nothing old enough
    assert a.destroy(user_id + 1) == 1  # a purge in another process
    queries.clear()
    assert b.refresh(older_than_s=0) == 3 and len(queries) == 1  # one query for all
    assert list(b._cache) == order  # a refresh is not a use: the LRU order is kept
    assert all(b._cache[k].loaded_at > stamps[k] for k in order)
    with pytest.raises(KeyDestroyed):  # gone at the refresh, not at the TTL
        b.decrypt(user_id + 1, blobs[user_id + 1])
    assert b.decrypt(user_id + 2, blobs[user_id + 2]) == f"sealed for {user_id + 2}"
    # the same wrapped row read again: the key is reused, not unwrapped and derived again
    assert b._cache[("default", user_id + 2)].keys[kept.key_id] is kept


def test_a_purge_during_a_refresh_stays_purged(stores, user_id):
    ring = _ring(stores, b"master-refresh-race")
    blob = ring.encrypt(user_id, "zq refresh race")
    fetch = ring._fetch

    def fetch_then_forgotten(users, tenant, known=None):
        got = fetch(users, tenant, known)  # read before the purge's destroy
        ring.forget(user_id)  # what a concurrent purge does
        return got

    ring._fetch = fetch_then_forgotten
    assert ring.refresh(older_than_s=0) == 0  # the old read is not published
    assert ("default", user_id) not in ring._cache
    ring._fetch = fetch
    assert ring.decrypt(user_id, blob) == "zq refresh race"  # (not destroyed: re-read)


def test_the_refresher_keeps_entries_fresh_without_a_request(stores, user_id):
    import time

    ring = _ring(stores, b"master-refresher", ttl_s=0.4)
    ring.encrypt(user_id, "x")
    first = ring._cache[("default", user_id)].loaded_at
    thread = ring.start_refresher()
    assert ring.start_refresher() is thread and thread.daemon  # one per ring
    time.sleep(1.2)
    entry = ring._cache[("default", user_id)]
    assert entry.loaded_at > first and time.monotonic() - entry.loaded_at <= ring.ttl_s


def test_a_refresh_is_not_a_use_the_least_recently_used_user_leaves_first(stores, user_id):
    ring = _ring(stores, b"master-lru", cache_size=3)
    first, second, third, fourth = (user_id + i for i in range(4))
    for u in (first, second, third):
        ring.encrypt(u, "x")
    ring.encrypt(first, "y")  # a use: second is now the least recent
    assert ring.refresh(older_than_s=0) == 3
    ring.encrypt(fourth, "x")  # a fourth user makes room: the least recent leaves
    held = {u for _, u in ring._cache}
    assert held == {first, third, fourth}
