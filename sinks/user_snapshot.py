"""Per-user snapshots in Redis: a cold user loads in one Redis read
(docs/operations.md#the-hot-cache-and-redis-snapshots).

Without it a user the process cache does not hold costs one ClickHouse ``FINAL`` query,
one Milvus read and one archived-hashes query (~75 ms, most of it CPU behind the
embedded engines' locks); a burst of them queued recalls past their timeout. A snapshot
is one Redis hash per (tenant, user)::

    snap:<user>   _gen   the generation it was built or last patched at
                  r:<memory_id>   version ‖ sealed(record bytes ⏎ its BM25 terms)  ACTIVE
                                  or paged out (``core.capacity.paged_out``)
                  v:<memory_id>   version ‖ sealed(int8 row ‖ 1/|row|)  its vector
                  d:<token>       version ‖ sealed([content_hash, memory_id])  ARCHIVED
    snapgen:<user>  the user's write generation

(names inside the tenant's namespace, ``memstream.schemas.tenants.scoped``). Every value is sealed
with the user's data key (``sinks.keyring``): a purge destroys that key, so whatever is
left of a snapshot stops opening at once, and the purge deletes the hash too. ``d:``
fields are named by the user's blind token of the hash, not the hash itself. The records
and rows are the very bytes the process cache holds (``core.record_codec``,
``core.user_index.quantize``), so a user loaded from here ranks exactly as one loaded
from the stores, and loads without building an object per memory. Older snapshots
(a JSON list per record, float16 rows) still open.

Kept current by the writer, not rebuilt: every process that writes through
:class:`sinks.memory_store.MemoryStore` subscribes :meth:`UserSnapshots.apply`, which
after each durable write runs one Lua script per touched user: bump the generation, and
if the snapshot exists patch it (set the changed records and rows, delete what left
ACTIVE, keep a field whose stored version is newer) and stamp it with the new
generation. A weight change (decay, a recall hit) patches one field; it does not cost
the next load a rebuild.

Rebuilt when missing: a loader reads the generation *before* it reads the stores, and
saves what it loaded only if the generation is unchanged (one Lua script); a reader
trusts a snapshot only if its ``_gen`` equals the user's generation (read together, in
one MULTI). Whatever the interleaving, a snapshot that misses a write is never read:
the write's bump comes after the write is durable, so either the loader saw the write,
or the bump finds the snapshot and patches it, or the save is refused.

Redis stays a cache. Losing it loses nothing (the next load reads the stores and saves a
new snapshot). If Redis cannot be reached while a write's bump runs, the user is kept
in ``_pending`` and their snapshot is deleted before this process reads or patches
anything else; a snapshot can then be stale only if another process reads it before
that retry succeeds, and never for longer than ``ttl_s`` (the bound the README states).
A memory restored with no new vector (its row is not in the batch) deletes the snapshot
when the snapshot lacks its row: the next load rebuilds with it.
"""

from __future__ import annotations

import json
import logging
import struct
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import redis
from prometheus_client import Counter
from redis.commands.core import Script

from core import record_codec
from core.lexical import indexed_text, term_counts
from core.user_index import UserIndex
from core.vector_rows import quantize, row_bytes, row_from_bytes
from core.write_batch import WriteBatch
from memstream.schemas.enums import APART_TYPES, Status
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.tenants import UserKey, scoped
from sinks.crypto import DataKey, DecryptionError
from sinks.keyring import KeyRing
from sinks.redis_store import RedisStore

log = logging.getLogger(__name__)

SNAPSHOTS = Counter(
    "memstream_user_snapshots_total",
    "per-user Redis snapshots: read (hit / miss / stale / error), saved, refused, patched",
    ["outcome"],
)

_P_ID, _P_VERSION = record_codec.POS["memory_id"], record_codec.POS["version"]
_P_CONTENT = record_codec.POS["content"]
_P_ENTITIES = record_codec.POS["entities"]
_HSET_CHUNK = 500  # field/value pairs per HSET inside the save script

# KEYS: snap, gen. ARGV: ttl, mode ('P' patch / 'X' drop), then (op, field, value)
# triples: S = set unless the held value's 8-byte version is newer; N = the field in
# value must be held, or the snapshot is dropped (a record whose row is not in the
# batch); D = delete. Returns 1 when it patched, 0 when there was nothing (or it dropped).
_PATCH = """
local g = redis.call('INCR', KEYS[2])
if g == 1 then
  local t = redis.call('TIME')
  g = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local gs = string.format('%.0f', g)
redis.call('SET', KEYS[2], gs, 'EX', tonumber(ARGV[1]) + 3600)
if ARGV[2] == 'X' or redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
for i = 3, #ARGV, 3 do
  local op, f, v = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if op == 'S' then
    local old = redis.call('HGET', KEYS[1], f)
    if (not old) or string.sub(old, 1, 8) <= string.sub(v, 1, 8) then
      redis.call('HSET', KEYS[1], f, v)
    end
  elseif op == 'N' then
    if redis.call('HEXISTS', KEYS[1], v) == 0 then
      redis.call('DEL', KEYS[1])
      return 0
    end
  else
    redis.call('HDEL', KEYS[1], f)
  end
end
redis.call('HSET', KEYS[1], '_gen', gs)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
return 1
"""

# KEYS: snap, gen. ARGV: the generation read before the stores ('' for none), ttl,
# chunk size, then field/value pairs. Saves only if the generation did not move.
_SAVE = """
local g = redis.call('GET', KEYS[2])
if (g or '') ~= ARGV[1] then return 0 end
if not g then
  local t = redis.call('TIME')
  g = string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))
end
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[2], g, 'EX', ttl + 3600)
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], '_gen', g)
local chunk = tonumber(ARGV[3]) * 2
for i = 4, #ARGV, chunk do
  redis.call('HSET', KEYS[1], unpack(ARGV, i, math.min(i + chunk - 1, #ARGV)))
end
redis.call('EXPIRE', KEYS[1], ttl)
return 1
"""


@dataclass
class Snapshot:
    """What a snapshot holds, opened: each record's bytes (``core.record_codec``) with
    its parsed fields and BM25 term counts, the quantized rows, and the content_hash ->
    memory_id map of the user's ARCHIVED memories."""

    records: list[tuple[bytes, list[Any], dict[str, int]]]  # (bytes, fields, terms)
    rows: dict[str, bytes]  # memory_id -> its row as ``core.user_index.row_bytes`` writes it
    dormant: dict[str, str]


class UserSnapshots:
    def __init__(
        self,
        redis_store: RedisStore,
        keys: KeyRing,
        dim: int,
        ttl_s: int,
        pages: Callable[[MemoryRecord], bool] | None = None,
    ):
        self._redis = redis_store
        # which ARCHIVED records are paged out (kept like ACTIVE ones); None: none
        self._pages = pages
        self._keys = keys
        self.dim = dim
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._pending: set[UserKey] = set()  # bumps that did not reach Redis: drop first
        self._scripts: tuple[Script, Script] | None = None  # (patch, save): registered once

    # ------------------------------------------------------------ names
    @staticmethod
    def snap_key(key: UserKey) -> str:
        return scoped(key.tenant, f"snap:{key.user_id}")

    @staticmethod
    def gen_key(key: UserKey) -> str:
        return scoped(key.tenant, f"snapgen:{key.user_id}")

    def _client(self) -> redis.Redis:
        return self._redis.raw

    def _script(self, which: int) -> Script:
        """The patch (0) or save (1) script, registered on the raw client on first use."""
        if self._scripts is None:
            client = self._client()
            self._scripts = (client.register_script(_PATCH), client.register_script(_SAVE))
        return self._scripts[which]

    # ------------------------------------------------------------ reads
    def read(self, keys: list[UserKey]) -> tuple[dict[UserKey, Snapshot], dict[UserKey, bytes]]:
        """The valid snapshots among ``keys``, and every key's generation as read (what
        a loader of the missing ones passes to :meth:`save`). Redis unreachable: no
        snapshots and no generations (the caller reads the stores and saves nothing)."""
        if not keys:
            return {}, {}
        try:
            self._flush_pending()
            pipe = self._client().pipeline(transaction=True)
            for k in keys:
                pipe.get(self.gen_key(k))
                pipe.hgetall(self.snap_key(k))
            replies = pipe.execute()
        except redis.RedisError as exc:
            SNAPSHOTS.labels("error").inc(len(keys))
            log.warning("user snapshots unreachable: %s", type(exc).__name__)
            return {}, {}
        found: dict[UserKey, Snapshot] = {}
        gens: dict[UserKey, bytes] = {}
        held: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            if replies[2 * i + 1]:
                held.setdefault(k.tenant, []).append(k.user_id)
        for tenant, user_ids in held.items():  # their data keys in one query per tenant
            self._keys.prefetch(user_ids, tenant)
        for i, k in enumerate(keys):
            gen, raw = replies[2 * i] or b"", replies[2 * i + 1]
            gens[k] = gen
            if not raw:
                SNAPSHOTS.labels("miss").inc()
                continue
            if raw.get(b"_gen") != gen or not gen:
                SNAPSHOTS.labels("stale").inc()
                continue
            try:
                found[k] = self._open(k, raw)
            except (DecryptionError, ValueError, KeyError) as exc:  # shredded or damaged
                SNAPSHOTS.labels("error").inc()
                log.warning("user snapshot unreadable, rebuilt: %s", type(exc).__name__)
                continue
            SNAPSHOTS.labels("hit").inc()
        return found, gens

    def _open(self, key: UserKey, raw: dict[bytes, bytes]) -> Snapshot:
        records, rows, dormant = [], {}, {}
        unseal = self._unsealer(key)
        width = self.dim + 4
        for name, value in raw.items():
            kind = name[:2]
            if kind == b"r:":
                records.append(_decode(unseal(value)))
            elif kind == b"v:":
                row = unseal(value)
                if len(row) != width:  # an older float16 row: quantized as when loaded
                    row = row_bytes(*row_from_bytes(row, self.dim))
                rows[name[2:].decode()] = row
            elif kind == b"d:":
                content_hash, memory_id = json.loads(unseal(value))
                dormant[content_hash] = memory_id
        return Snapshot(records, rows, dormant)

    # ------------------------------------------------------------ writes
    def save(
        self,
        key: UserKey,
        gen: bytes | None,
        idx: UserIndex,
        terms: dict[str, dict[str, int]] | None = None,
    ) -> bool:
        """Store the user's index (``core.user_index.UserIndex``) if the generation is
        still ``gen`` (read before the stores were); False when refused or unreachable.
        ``gen`` None (Redis was unreachable at the read) saves nothing. ``terms``: the
        memories' term counts when the caller has them (else tokenized here)."""
        if gen is None:
            return False
        with idx.lock:
            held = idx.encoded()
            if idx.paged is not None:
                held += idx.paged.encoded()
            dormant = dict(idx.dormant)
        try:
            argv: list[bytes | str | int] = [gen, self.ttl_s, _HSET_CHUNK]
            for blob, row in held:
                vals = record_codec.parse(blob)
                mid, version = vals[_P_ID], max(0, int(vals[_P_VERSION]))
                counts = (terms or {}).get(mid)
                if counts is None:
                    counts = term_counts(indexed_text(vals[_P_CONTENT], vals[_P_ENTITIES]))
                argv += [f"r:{mid}", self._seal(key, version, _encode(blob, counts))]
                argv += [f"v:{mid}", self._seal(key, version, row)]
            for content_hash, memory_id in dormant.items():
                argv += self._dormant_field(key, content_hash, memory_id, 0)
            client, save = self._client(), self._script(1)
            saved = bool(save(keys=[self.snap_key(key), self.gen_key(key)], args=argv,
                                    client=client))  # fmt: skip
        except (redis.RedisError, DecryptionError) as exc:
            SNAPSHOTS.labels("error").inc()
            log.warning("user snapshot not saved: %s", type(exc).__name__)
            return False
        SNAPSHOTS.labels("saved" if saved else "refused").inc()
        return saved

    def apply(self, batch: WriteBatch) -> None:
        """Write listener (``MemoryStore.subscribe``): bump and patch every touched user."""
        ops: dict[UserKey, list[bytes | str]] = {}
        drop: set[UserKey] = {UserKey(*k) for k in batch.shred_users}
        owner: dict[str, UserKey] = {}
        for m in batch.memories:
            key = UserKey(m.tenant_id, m.user_id)
            owner[m.memory_id] = key
            if m.mem_type in APART_TYPES:
                # a profile (or an item) is never held here (a load from a snapshot reads it from the
                # store): patching it in as a meta change without a row dropped the whole
                # snapshot at every batch, the profile being planned again in each
                continue
            try:
                ops.setdefault(key, []).extend(self._ops(key, m, batch.vectors.get(m.memory_id)))
            except DecryptionError:  # no key to seal with (a purge raced): rebuild later
                drop.add(key)
        for c in batch.changes:
            owner.setdefault(c.memory_id, UserKey(c.tenant_id, c.user_id))
        for mid in batch.milvus_deletes:
            if (named := owner.get(mid)) is not None:
                ops.setdefault(named, []).extend(["D", f"r:{mid}", "", "D", f"v:{mid}", ""])
        for mid in batch.purge_ids:  # a physical purge: whatever named it is rebuilt
            if (named := owner.get(mid)) is not None:
                drop.add(named)
        self.run({**ops, **{k: None for k in drop}})

    def run(self, ops: Mapping[UserKey, Sequence[bytes | str] | None]) -> None:
        """One patch per user (None: drop the snapshot); users Redis did not get stay
        pending and are dropped before anything else this process does with snapshots."""
        if not ops:
            return
        try:
            self._flush_pending()
            client, patch = self._client(), self._script(0)
            pipe = client.pipeline(transaction=False)
            for key, args in ops.items():
                mode = "X" if args is None else "P"
                patch(keys=[self.snap_key(key), self.gen_key(key)],
                            args=[self.ttl_s, mode, *(args or [])], client=pipe)  # fmt: skip
            results = pipe.execute()
        except redis.RedisError as exc:
            with self._lock:
                self._pending.update(ops)
            SNAPSHOTS.labels("error").inc(len(ops))
            log.warning("user snapshots not patched (%d users pending): %s", len(ops),
                        type(exc).__name__)  # fmt: skip
            return
        SNAPSHOTS.labels("patched").inc(sum(1 for r in results if r == 1))

    def drop(self, keys: Iterable[UserKey]) -> None:
        """Delete these users' snapshots (a repair changed the stores under them)."""
        self.run({UserKey(*k): None for k in keys})

    def _flush_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, set()
        if not pending:
            return
        try:
            client, patch = self._client(), self._script(0)
            pipe = client.pipeline(transaction=False)
            for key in pending:
                patch(keys=[self.snap_key(key), self.gen_key(key)],
                            args=[self.ttl_s, "X"], client=pipe)  # fmt: skip
            pipe.execute()
        except redis.RedisError:
            with self._lock:
                self._pending.update(pending)
            raise

    def _ops(self, key: UserKey, m: MemoryRecord, vector: np.ndarray | None) -> list[bytes | str]:
        version = _version(m)
        mid = m.memory_id
        out: list[bytes | str] = []
        searched = m.status is Status.ACTIVE and m.invalid_at is None
        if searched or (m.status is Status.ARCHIVED and self._pages and self._pages(m)):
            if vector is None:
                out += ["N", "", f"v:{mid}"]  # meta change: its row must be there already
            else:
                row = row_bytes(*quantize(vector))
                out += ["S", f"v:{mid}", self._seal(key, version, row)]
            # the writer's index tokenized it already (term_counts remembers)
            counts = term_counts(indexed_text(m.content, m.entities))
            blob = _encode(record_codec.encode(m), counts)
            out += ["S", f"r:{mid}", self._seal(key, version, blob)]
        else:
            out += ["D", f"r:{mid}", "", "D", f"v:{mid}", ""]
        if m.status is Status.ARCHIVED:
            out += ["S", *self._dormant_field(key, m.content_hash, mid, version)]
        else:
            out += ["D", self._dormant_name(key, m.content_hash), ""]
        return out

    def _dormant_name(self, key: UserKey, content_hash: str) -> str:
        return f"d:{self._keys.blind(key.user_id, content_hash, key.tenant)}"

    def _dormant_field(
        self, key: UserKey, content_hash: str, mid: str, version: int
    ) -> list[bytes | str]:
        sealed = self._seal(key, version, json.dumps([content_hash, mid]).encode())
        return [self._dormant_name(key, content_hash), sealed]

    def _seal(self, key: UserKey, version: int, data: bytes) -> bytes:
        dk = self._keys.current(key.user_id, key.tenant)
        kid = dk.key_id.encode()
        return struct.pack(">QB", version, len(kid)) + kid + dk.encrypt_bytes(data)

    def _unseal(self, key: UserKey, value: bytes) -> bytes:
        return self._unsealer(key)(value)

    def _unsealer(self, key: UserKey) -> Callable[[bytes], bytes]:
        """``_unseal`` for many values of one user: each data key is looked up in the
        keyring once, not once per field (400 lookups for a 200-memory snapshot)."""
        found: dict[bytes, DataKey] = {}

        def unseal(value: bytes) -> bytes:
            n = value[8]
            kid = value[9 : 9 + n]
            dk = found.get(kid)
            if dk is None:
                dk = found[kid] = self._keys.key(key.user_id, kid.decode(), key.tenant)
            return dk.decrypt_bytes(value[9 + n :])

        return unseal


def _version(m: MemoryRecord) -> int:
    return max(0, int(m.version))


def _encode(blob: bytes, terms: dict[str, int]) -> bytes:
    """A record's bytes (``core.record_codec``), a newline, its BM25 term counts as JSON
    (compact JSON holds no raw newline, so the first one splits them)."""
    return blob + b"\n" + json.dumps(terms, ensure_ascii=False, separators=(",", ":")).encode()


def _decode(data: bytes) -> tuple[bytes, list[Any], dict[str, int]]:
    """(record bytes, its parsed fields, its terms) of an ``r:`` value; also reads the
    older layout, ``[record fields, terms]`` as one JSON list."""
    cut = data.find(b"\n")
    if cut >= 0:
        blob, terms = data[:cut], orjson.loads(data[cut + 1 :])
        return blob, record_codec.parse(blob), terms
    vals, terms = json.loads(data)
    blob = json.dumps(vals, ensure_ascii=False, separators=(",", ":")).encode()
    return blob, record_codec.parse(blob), terms
