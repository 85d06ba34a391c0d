"""Per-(tenant, user) data keys: created on first write, wrapped by the master key,
stored in ClickHouse (``data_keys``), cached unwrapped in memory, destroyed by purge.

This is what makes the purge promise hold everywhere at once (crypto-shredding): every
copy of a user's words that memstream writes — memory and change-log content and tags
in ClickHouse, the tag tokens in Milvus, the API's events on ``memory.conversations`` and
``memory.commands``, the ingest window state in Bytewax snapshots, export files — is
sealed with the user's data key. ``destroy(user)`` erases the wrapped key rows (a
synchronous ``ALTER TABLE … DELETE``) and the cached copies, so those copies stop
opening in every store, topic, snapshot and backup before the physical purge runs.

The tenant (``memstream.schemas.tenants``) is part of the table key and of every blob's associated
data: user 42 of two tenants has two keys, and a blob of one never opens as the other's.

Cache: an LRU of at most ``cache_size`` users, each entry trusted for ``ttl_s``
seconds. A purge in this process drops the entry at once; another process (a separate
API, an ingest worker) stops using a destroyed key within ``ttl_s`` (and the keyed
writer drops it when it applies the purge command). A recall process keeps its entries
fresh ahead of time (``start_refresher``): every ``ttl_s / 4`` one query per tenant
re-reads the entries older than ``ttl_s / 2``, so a user loaded cold from a Redis
snapshot finds its key cached instead of paying a ClickHouse query on the request path
(~10 ms behind the embedded engine's lock, the largest part of a snapshot load). The
bound is the same: no entry is used older than ``ttl_s``.

Tag search is a keyed blind index (``blind``): Milvus holds HMAC tokens of tag keys and
values, never the tags; the hot path filters decrypted records in memory.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from core.lru import LRU
from core.settings import Settings
from sinks.clickhouse import ClickHouseStore
from sinks.crypto import V1, V2, DataKey, DecryptionError, KeyDestroyed, LegacyCipher, key_id_of
from sinks.master_key import MasterKey, UnwrapError, masters_from_settings

log = logging.getLogger(__name__)
DEFAULT_TENANT = "default"


@dataclass
class _Entry:
    loaded_at: float
    keys: dict[str, DataKey] = field(default_factory=dict)
    current: str | None = None
    missing: set[str] = field(default_factory=set)  # ids looked up again and not found
    # key id -> the wrapped row it was unwrapped from: a refresh that reads the same row
    # reuses the key (no unwrap, no derivation)
    rows: dict[str, str] = field(default_factory=dict)


def _context(tenant: str, user_id: int, key_id: str) -> bytes:
    return f"memstream data key|{tenant}|{user_id}|{key_id}".encode()


class KeyRing:
    def __init__(
        self,
        clickhouse: ClickHouseStore,
        master: MasterKey,
        previous: Iterable[MasterKey] = (),
        legacy: LegacyCipher | None = None,
        cache_size: int = 10_000,
        ttl_s: float = 60.0,
    ):
        self.ch = clickhouse
        self.master = master
        self.previous = {m.key_id: m for m in previous}
        self.legacy = legacy
        self.cache_size = cache_size
        self.ttl_s = ttl_s
        # a refresh or a prefetch check is not a use (peek); behind self._lock
        self._cache: LRU[tuple[str, int], _Entry] = LRU(maxsize=cache_size)
        self._lock = threading.RLock()
        self._refresher: threading.Thread | None = None

    @classmethod
    def from_settings(cls, s: Settings, clickhouse: ClickHouseStore) -> KeyRing:
        master, previous = masters_from_settings(s)
        return cls(
            clickhouse,
            master,
            previous,
            LegacyCipher(master.secret),
            s.data_key_cache_size,
            s.data_key_cache_ttl_s,
        )

    @property
    def _table(self) -> str:
        return f"{self.ch.database}.data_keys"

    # ------------------------------------------------------------ content
    def encrypt(self, user_id: int, text: str, tenant: str = DEFAULT_TENANT) -> str:
        if not text:
            return ""
        return self.current(user_id, tenant).encrypt(text)

    def decrypt(self, user_id: int, blob: str, tenant: str = DEFAULT_TENANT) -> str:
        """Plaintext of a ``v2``/``v1`` blob; KeyDestroyed once the user was purged."""
        if not blob:
            return ""
        if blob.startswith(V2):
            return self.key(user_id, key_id_of(blob) or "", tenant).decrypt(blob)
        if blob.startswith(V1) and self.legacy is not None:
            return self.legacy.decrypt(blob)
        raise DecryptionError("unknown ciphertext version")

    def open(self, user_id: int, blob: str, tenant: str = DEFAULT_TENANT) -> str:
        """As ``decrypt``, but a shredded blob reads as ``""`` (what a purge leaves)."""
        try:
            return self.decrypt(user_id, blob, tenant)
        except KeyDestroyed:
            return ""

    def blind(self, user_id: int, text: str, tenant: str = DEFAULT_TENANT) -> str:
        """The user's token for ``text`` (what Milvus stores for a tag)."""
        return self.current(user_id, tenant).blind(text)

    def blind_all(self, user_id: int, text: str, tenant: str = DEFAULT_TENANT) -> list[str]:
        """The token under every live key of the user (what a tag filter asks for), so
        rows written while two processes raced to create the first key still match."""
        entry = self._entry(user_id, tenant)
        return sorted({k.blind(text) for k in entry.keys.values()})

    # ------------------------------------------------------------ keys
    def current(self, user_id: int, tenant: str = DEFAULT_TENANT) -> DataKey:
        """The key new data of the user is sealed with; created on first use."""
        entry = self._entry(user_id, tenant)
        if entry.current is None:
            entry = self._create(user_id, tenant)
        return entry.keys[entry.current or ""]

    def key(self, user_id: int, key_id: str, tenant: str = DEFAULT_TENANT) -> DataKey:
        entry = self._entry(user_id, tenant)
        if key_id not in entry.keys and key_id not in entry.missing:
            entry = self._entry(user_id, tenant, refresh=True)  # made elsewhere since?
        found = entry.keys.get(key_id)
        if found is None:
            entry.missing.add(key_id)  # a shredded row costs one lookup per TTL, not each
            raise KeyDestroyed(f"data key {key_id} of user {user_id} is destroyed (purged)")
        return found

    def fixed(self, user_id: int, tenant: str, key_id: str, material: bytes) -> DataKey:
        """The key ``key_id`` of (tenant, user), stored with ``material`` the first time.
        Processes that derive the same material store the same row (two racing writes of
        it collapse into one), so they agree on the key before either reads the other's;
        once stored, the stored material wins (a master rotation re-wraps it, never
        changes it). For server keys that are no user's (sinks/user_registry.py)."""
        found = self._entry(user_id, tenant).keys.get(key_id)
        if found is None:  # made by another process since this one looked?
            found = self._entry(user_id, tenant, refresh=True).keys.get(key_id)
        if found is None and self._stored(user_id, tenant, key_id):
            # stored, yet it did not unwrap (its master is gone): never replace it, which
            # would change what every use of it made (the registry's tokens)
            raise DecryptionError(f"data key {key_id} does not unwrap; set the previous master")
        if found is None:
            self._insert([self._row(tenant, user_id, key_id, material, datetime.now(UTC))])
            found = self._entry(user_id, tenant, refresh=True).keys.get(key_id)
        if found is None:  # the insert does not land: refuse rather than use an unstored key
            raise DecryptionError(f"could not store the data key {key_id}")
        return found

    def _stored(self, user_id: int, tenant: str, key_id: str) -> bool:
        where = "tenant_id = {t:String} AND user_id = {u:UInt64} AND key_id = {k:String}"
        params = {"t": tenant, "u": user_id, "k": key_id}
        rows = self.ch.query(f"SELECT count() FROM {self._table} WHERE {where}", params)
        return int(rows[0][0]) > 0

    def prefetch(
        self, user_ids: Iterable[int], tenant: str = DEFAULT_TENANT, create: bool = False
    ) -> None:
        """Load the keys of many users in one query (a multi-user read); with ``create``,
        also give every user who has none a key, in one insert and one read-back (what
        an ingest batch of new users needs before anything of theirs is sealed)."""
        wanted = set(user_ids)
        now = time.monotonic()
        with self._lock:
            stale = [
                u
                for u in wanted
                if (e := self._cache.peek((tenant, u))) is None or now - e.loaded_at > self.ttl_s
            ]
        loaded = self._load(stale, tenant)[0] if stale else {}
        if not create:
            return
        with self._lock:
            keyless = sorted(
                u
                for u in wanted
                if (e := loaded.get(u) or self._cache.peek((tenant, u))) is None
                or e.current is None
            )
        if keyless:
            stamp = datetime.now(UTC)
            rows = [
                self._row(tenant, u, uuid.uuid4().hex[:16], os.urandom(32), stamp) for u in keyless
            ]
            self._insert(rows)
            self._load(keyless, tenant)  # (a user a purge raced gets one in current())

    def destroy(self, user_id: int, tenant: str = DEFAULT_TENANT) -> int:
        """Crypto-shred the user: erase every wrapped data key row, then the cached copy.
        Returns how many keys existed. New writes of the user get a new key."""
        params = {"t": tenant, "u": user_id}
        where = "tenant_id = {t:String} AND user_id = {u:UInt64}"
        n = int(self.ch.query(f"SELECT count() FROM {self._table} WHERE {where}", params)[0][0])
        # A mutation rewrites the parts (a lightweight DELETE would only mask the rows); on
        # a cluster it goes to the local tables ON CLUSTER, every replica waited for.
        target = self.ch.layout.mutate("data_keys")
        self.ch.command(
            f"ALTER TABLE {target} DELETE WHERE {where} SETTINGS mutations_sync = 2", params
        )
        self.forget(user_id, tenant)
        log.info("data key destroyed", extra={"fields": {"user_id": user_id, "keys": n}})
        return n

    def forget(self, user_id: int, tenant: str = DEFAULT_TENANT) -> None:
        with self._lock:
            self._cache.pop((tenant, user_id), None)

    def refresh(self, older_than_s: float | None = None, chunk: int = 2000) -> int:
        """Re-read the cached entries older than ``older_than_s`` (default ``ttl_s / 2``)
        in one query per tenant and ``chunk`` users; returns how many were re-read.

        An entry is replaced only if the cache still holds the very entry the refresh
        started from: one that a purge dropped (``forget``) meanwhile stays dropped, one
        that a request reloaded meanwhile keeps the newer read. The LRU order is kept
        (a refresh is not a use)."""
        limit = self.ttl_s / 2 if older_than_s is None else older_than_s
        now = time.monotonic()
        with self._lock:
            due = [(k, e) for k, e in self._cache.held() if now - e.loaded_at > limit]
        by_tenant: dict[str, list[tuple[int, _Entry]]] = {}
        for (tenant, user_id), entry in due:
            by_tenant.setdefault(tenant, []).append((user_id, entry))
        done = 0
        for tenant, items in by_tenant.items():
            for start in range(0, len(items), chunk):
                part = items[start : start + chunk]
                fresh = self._fetch([u for u, _ in part], tenant, dict(part))[0]
                with self._lock:
                    for user_id, seen in part:
                        if self._cache.peek((tenant, user_id)) is seen:
                            self._cache.replace((tenant, user_id), fresh[user_id])
                            done += 1
        return done

    def start_refresher(self, interval_s: float | None = None) -> threading.Thread:
        """Refresh ahead (``refresh``) every ``interval_s`` (default ``ttl_s / 4``) on a
        daemon thread, once per ring; the thread ends when the ring is collected."""
        with self._lock:
            if self._refresher is not None:
                return self._refresher
            interval = self.ttl_s / 4 if interval_s is None else interval_s
            ring = weakref.ref(self)

            def loop() -> None:
                while True:
                    time.sleep(interval)
                    me = ring()
                    if me is None:
                        return
                    try:
                        me.refresh()
                    except Exception as exc:  # the store is away: requests load as before
                        log.info("data key refresh failed: %s", type(exc).__name__)
                    del me

            self._refresher = threading.Thread(target=loop, name="keyring-refresh", daemon=True)
            self._refresher.start()
            return self._refresher

    def rewrap_all(self) -> int:
        """Re-wrap every data key not wrapped by the current master (rotation); content
        is untouched. Returns how many were re-wrapped."""
        rows = self.ch.query(
            f"SELECT tenant_id, user_id FROM {self._table} FINAL "
            "WHERE master_id != {m:String} GROUP BY tenant_id, user_id",
            {"m": self.master.key_id},
        )
        by_tenant: dict[str, list[int]] = {}
        for tenant, user_id in rows:
            by_tenant.setdefault(tenant, []).append(int(user_id))
        done = 0
        for tenant, users in by_tenant.items():
            for start in range(0, len(users), 1000):
                done += self._load(users[start : start + 1000], tenant)[1]
        return done

    # ------------------------------------------------------------ internals
    def _entry(self, user_id: int, tenant: str, refresh: bool = False) -> _Entry:
        with self._lock:
            entry = self._cache.get((tenant, user_id))  # a use: now the most recent
            if (
                entry is not None
                and not refresh
                and time.monotonic() - entry.loaded_at <= self.ttl_s
            ):
                return entry
        # What this load read, not a second cache lookup: a purge in another thread
        # (``forget``) or the LRU may drop the entry the moment it is published.
        return self._load([user_id], tenant)[0][user_id]

    def _load(self, user_ids: list[int], tenant: str) -> tuple[dict[int, _Entry], int]:
        """Fetch, unwrap (re-wrapping what an old master wrapped) and cache; returns the
        entries loaded and how many keys were re-wrapped."""
        entries, rewrapped = self._fetch(user_ids, tenant)
        with self._lock:
            for user_id, entry in entries.items():
                self._cache[(tenant, user_id)] = entry  # the least recent leave past cache_size
        return entries, rewrapped

    def _fetch(
        self, user_ids: list[int], tenant: str, known: dict[int, _Entry] | None = None
    ) -> tuple[dict[int, _Entry], int]:
        """The users' entries as ClickHouse holds them now (not cached here), and how
        many keys were re-wrapped. A key whose row is the one ``known`` (the entries a
        refresh re-reads) was unwrapped from is reused, not unwrapped and derived again:
        a refresh of a full ring (10,000 users, chDB) measured 0.34-0.38 s of CPU that
        way against 0.07-0.18 s reusing, every ``ttl_s / 4``."""
        rows = self.ch.query(
            f"SELECT user_id, key_id, wrapped, master_id, created_at FROM {self._table} FINAL "
            "WHERE tenant_id = {t:String} AND user_id IN {u:Array(UInt64)} "
            "ORDER BY user_id, created_at, key_id",
            {"t": tenant, "u": user_ids},
        )
        now = time.monotonic()
        entries = {u: _Entry(now) for u in user_ids}
        rewrapped = []
        known = known or {}
        for user_id, key_id, wrapped, master_id, created_at in rows:
            user_id = int(user_id)
            old = known.get(user_id)
            # (an old master's row is unwrapped again: it is re-wrapped below)
            if (
                old is not None
                and master_id == self.master.key_id
                and old.rows.get(key_id) == wrapped
            ):
                key = old.keys[key_id]
            else:
                material = self._unwrap(tenant, user_id, key_id, wrapped, master_id)
                if material is None:
                    continue
                if master_id != self.master.key_id:
                    rewrapped.append(self._row(tenant, user_id, key_id, material, created_at))
                key = DataKey.of(tenant, user_id, key_id, material)
            entry = entries[user_id]
            entry.keys[key_id], entry.rows[key_id] = key, wrapped
            entry.current = key_id  # the newest live key seals new data
        if rewrapped:
            self._insert(rewrapped)
        return entries, len(rewrapped)

    def _unwrap(
        self, tenant: str, user_id: int, key_id: str, wrapped: str, master_id: str
    ) -> bytes | None:
        master = self.master if master_id == self.master.key_id else self.previous.get(master_id)
        if master is None:
            log.error(
                "data key wrapped by an unknown master key; set encryption_previous_keys",
                extra={"fields": {"user_id": user_id, "master_id": master_id}},
            )
            return None
        try:
            return master.unwrap(base64.b64decode(wrapped), _context(tenant, user_id, key_id))
        except UnwrapError:
            log.error("data key does not unwrap", extra={"fields": {"user_id": user_id}})
            return None

    def _create(self, user_id: int, tenant: str) -> _Entry:
        # A purge of the same user running in another thread or process can erase the
        # row between the insert and the read-back: then the purge is over, so a second
        # key outlives it (data sealed with the erased one would never open again).
        for _ in range(3):
            key_id = uuid.uuid4().hex[:16]
            material = os.urandom(32)
            self._insert([self._row(tenant, user_id, key_id, material, datetime.now(UTC))])
            entry = self._entry(user_id, tenant, refresh=True)
            if entry.current is not None:
                return entry
        # the insert does not land: refuse rather than seal data no key will open
        raise DecryptionError(f"could not store a data key for user {user_id}")

    def _row(
        self, tenant: str, user_id: int, key_id: str, material: bytes, created_at: datetime
    ) -> list:
        wrapped = self.master.wrap(material, _context(tenant, user_id, key_id))
        return [
            tenant,
            user_id,
            key_id,
            base64.b64encode(wrapped).decode("ascii"),
            self.master.key_id,
            created_at,
            time.time_ns(),
        ]

    def _insert(self, rows: list[list]) -> None:
        self.ch.insert(
            "data_keys",
            rows,
            ["tenant_id", "user_id", "key_id", "wrapped", "master_id", "created_at", "version"],
        )

    # ------------------------------------------------------------ links
    def sign(self, message: str) -> str:
        if self.legacy is None:
            raise DecryptionError("no signing key")
        return self.legacy.sign(message)

    def verify(self, message: str, signature: str) -> bool:
        return self.legacy is not None and self.legacy.verify(message, signature)
