"""The durable write and read path of memories: ClickHouse is the record, Milvus follows.

``write(batch)`` makes one round trip per store: a columnar insert of new memory
versions and one of change-log rows into ClickHouse, one Milvus upsert (full rows when
a vector is given, partial scalar rows otherwise), one publish to ``memory.changes``.
A Milvus write that still fails after retries is queued in Redis for the reconcile pass
(``reconcile:pending``), so a memory is never missing from one store for ever. In-process
listeners (the hot caches) see every applied batch at once.

Everything about a memory that is the user's words is sealed with the user's data key
(``sinks.keyring``): content, change-log content, ``custom_tags`` (the whole JSON) and the
source message ids in ClickHouse. Milvus gets no tags, only their blind-index tokens
(``blind_tags``), which a tag filter of the cold path matches (``core.scope``). After a
purge those blobs read as empty (``KeyRing.open``).

Every row, Milvus row and ``memory.changes`` event carries its ``tenant_id``; every read
of a user's memories names the tenant (``tenant=``), so user 42 of two tenants never
meet. Only ``load_ids`` (system passes over the whole store) reads across tenants. Whose
rows a read names is one ``WHERE`` builder (``sinks.memory_filter``), shared with the
lifecycle's queries (``sinks.lifecycle_queries``, this class's base).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any, cast

import numpy as np

from core.derived import PREFIX as PROFILE_PREFIX
from core.hashing import content_hash
from core.logs import describe_error
from core.retry import retrying
from core.write_batch import WriteBatch
from memstream.schemas.enums import APART_TYPES, DERIVED_TYPES, Level, MemType, Ownership, Status
from memstream.schemas.events import TOPIC_CHANGES, TOPIC_COMMANDS
from memstream.schemas.json_types import JsonObject
from memstream.schemas.limits import clip_tags
from memstream.schemas.memory import ChangeRecord, EntityLink, MemoryRecord, tags_json
from memstream.schemas.storage import (
    CHANGELOG_COLUMNS,
    ENTITIES_TABLE,
    ENTITY_COLUMNS,
    MEMORY_COLUMNS,
)
from memstream.schemas.tenants import DEFAULT_TENANT, UserKey
from sinks.change_events import blind_tags, change_events, milvus_row
from sinks.crypto import is_ciphertext
from sinks.errors import StoreUnavailable
from sinks.keyring import KeyRing
from sinks.lifecycle_queries import LifecycleQueries
from sinks.memory_filter import Given, MemoryFilter, strs
from sinks.stored_rows import decode_rows, instant, select_list
from sinks.stores import Stores

log = logging.getLogger(__name__)
_HASH_DOMAIN = "content_hash\x1f"  # keeps a content hash's token apart from a tag's
RECONCILE_KEY = "reconcile:pending"
_LIVE_ROWS = (str(Status.ACTIVE), str(Status.ARCHIVED))  # rows that must have a vector
_SELECT = select_list(MEMORY_COLUMNS)  # times as epoch ms: see sinks.stored_rows


def _untimed(part: str) -> AbstractContextManager:
    return nullcontext()


Listener = Callable[[WriteBatch], None]


class MemoryStore(LifecycleQueries):
    def __init__(self, stores: Stores, cipher: KeyRing, milvus_retries: int = 3):
        # Names this writer in its memory.changes events, so a process that follows the
        # topic can skip what its own listeners already applied.
        self.origin = uuid.uuid4().hex[:16]
        self.stores = stores
        self.cipher = cipher
        self.db = stores.clickhouse.database
        self._retries = milvus_retries
        self._retrying = retrying(attempts=milvus_retries, backoff_s=0.1, logger=log,
                                  message="milvus write failed")  # fmt: skip
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    # ------------------------------------------------------------------ writes
    def write(
        self, batch: WriteBatch, timed: Callable[[str], AbstractContextManager] = _untimed
    ) -> None:
        """``timed(part)``: a context that times each part (``clickhouse``, ``milvus``,
        ``changes``, ``cache``); the ingest sink counts them per stage."""
        if not batch:
            return
        for tenant, user_id in sorted(set(batch.shred_users)):
            self.cipher.destroy(user_id, tenant)  # before anything of this batch is sealed
        by_tenant: dict[str, set[int]] = {}
        written: list[MemoryRecord | ChangeRecord] = [*batch.memories, *batch.changes]
        for r in written:
            by_tenant.setdefault(r.tenant_id, set()).add(r.user_id)
        for tenant, users in by_tenant.items():
            self.cipher.prefetch(users, tenant)
        version = time.time_ns()
        ch = self.stores.clickhouse
        with timed("clickhouse"):
            rows = [self._row(m, version) for m in batch.memories]
            ch.insert("memories", rows, MEMORY_COLUMNS)
            changes = [self._change_row(c) for c in batch.changes]
            ch.insert("memory_changelog", changes, CHANGELOG_COLUMNS)
            links = self._entity_rows(batch, version)
            if links:
                ch.insert(ENTITIES_TABLE, links, ENTITY_COLUMNS)
            if batch.purge_ids:
                self._purge(sorted(set(batch.purge_ids)))
            by_user: dict[UserKey, list[str]] = {}
            for user, memory_id in batch.sanitize_cited:
                by_user.setdefault(user, []).append(memory_id)
            for user, ids in sorted(by_user.items()):
                self._blank_citing(ids, MemoryFilter.of(user.tenant, user.user_id))
            for tenant, user_id in sorted(set(batch.shred_users)):
                self._forget_plain_hashes(user_id, tenant)
                self._forget_entities(user_id, tenant)
        for m in batch.memories:
            m.version = version
        with timed("milvus"):
            self._write_milvus(batch)
        with timed("changes"):
            self._publish(batch)
            self._follow_up(batch)
        with timed("cache"):
            for listener in self._listeners:
                try:
                    listener(batch)
                except Exception:
                    log.exception("write listener failed")

    def _purge(self, ids: list[str]) -> None:
        """Physical purge: every version leaves every read at once (lightweight DELETE; the
        bytes go at the next merge) and the memory's change-log content is blanked. Both
        target the parts' tables (``layout.mutate``: the local tables ON CLUSTER on a
        cluster); ``mutations_sync = 2`` waits for every replica (one server: itself)."""
        ch, p = self.stores.clickhouse, {"ids": ids}
        memories, changelog = ch.layout.mutate("memories"), ch.layout.mutate("memory_changelog")
        ch.command(f"DELETE FROM {memories} WHERE memory_id IN {{ids:Array(String)}}", p)
        links = ch.layout.mutate(ENTITIES_TABLE)
        ch.command(f"DELETE FROM {links} WHERE memory_id IN {{ids:Array(String)}}", p)
        ch.command(
            f"ALTER TABLE {changelog} UPDATE content_before = '', "
            "content_after = '', sanitized = 1 WHERE memory_id IN {ids:Array(String)} "
            "SETTINGS mutations_sync = 2",
            p,
        )
        self._blank_citing(ids, MemoryFilter())

    def _blank_citing(self, ids: list[str], who: MemoryFilter) -> None:
        """The change rows of ``who``'s profile versions citing one of ``ids`` lose their
        words (docs/architecture.md#the-profile): a profile's change row names what its
        versions cite in its reason (``dataflows.ingest.derive``). A mutation only when
        one does."""
        ch = self.stores.clickhouse
        p: dict[str, object] = {"ids": ids, "pre": f"{PROFILE_PREFIX}%"}
        where = who.where(
            p,
            "memory_id LIKE {pre:String}",
            "sanitized = 0",
            "arrayExists(x -> position(reason, x) > 0, {ids:Array(String)})",
        )
        rows = ch.query(f"SELECT count() FROM {self.db}.memory_changelog WHERE {where}", p)
        if rows and int(rows[0][0]):
            ch.command(
                f"ALTER TABLE {ch.layout.mutate('memory_changelog')} UPDATE content_before = '', "
                f"content_after = '', sanitized = 1 WHERE {where} SETTINGS mutations_sync = 2",
                p,
            )

    def _forget_entities(self, user_id: int, tenant: str) -> None:
        """A purged user's entity links leave ``memory_entities`` at once, every version
        (their names were sealed with the destroyed key; the ids and links go too)."""
        ch, p = self.stores.clickhouse, dict[str, object]()
        where = MemoryFilter.of(tenant, user_id).where(p)
        ch.command(f"DELETE FROM {ch.layout.mutate(ENTITIES_TABLE)} WHERE {where}", p)

    def _forget_plain_hashes(self, user_id: int, tenant: str) -> None:
        """A purged user's rows written before hashes were keyed hold a plain sha256 of
        their text (64 hex; keyed ones are 32): blank them in every version, so nothing
        stored confirms a guessed sentence after the purge. One count; a mutation only
        when such rows exist."""
        ch, p = self.stores.clickhouse, dict[str, object]()
        where = MemoryFilter.of(tenant, user_id).where(p, "length(content_hash) = 64")
        rows = ch.query(f"SELECT count() FROM {self.db}.memories WHERE {where}", p)
        if rows and int(rows[0][0]):
            ch.command(
                f"ALTER TABLE {ch.layout.mutate('memories')} UPDATE content_hash = '' "
                f"WHERE {where} SETTINGS mutations_sync = 2",
                p,
            )

    def _write_milvus(self, batch: WriteBatch) -> None:
        gone = set(batch.milvus_deletes)  # a purged memory's row is deleted, not rewritten
        # a derived memory (a profile) has no vector and no row: it is never searched
        kept = [
            m for m in batch.memories if m.memory_id not in gone and m.mem_type not in DERIVED_TYPES
        ]
        full = [
            milvus_row(m, batch.vectors[m.memory_id], self.blind_tags(m))
            for m in kept
            if m.memory_id in batch.vectors
        ]
        partial = [
            milvus_row(m, None, self.blind_tags(m))
            for m in kept
            if m.memory_id not in batch.vectors
        ]
        mv = self.stores.milvus

        def attempt() -> None:
            nonlocal partial
            if full:
                mv.upsert(full)
            if partial:
                partial = self._upsert_partial(partial)
            if batch.milvus_deletes:
                mv.delete(batch.milvus_deletes)

        try:
            return self._retrying(attempt)
        except Exception as exc:
            log.warning("milvus write failed, queued for the reconcile",
                        extra={"fields": {"attempt": self._retries, **describe_error(exc)}})  # fmt: skip
        ids = [m.memory_id for m in batch.memories] + batch.milvus_deletes
        try:
            self.stores.redis.client.sadd(RECONCILE_KEY, *ids)
        except Exception:
            log.error("reconcile queue unavailable; the periodic reconcile will find the drift")

    def _upsert_partial(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Scalar-only upserts of rows Milvus holds; returns the rows written.

        A partial upsert of a row Milvus no longer holds fails the whole call (it would
        be an insert without a vector): a purge removed it while a write for that memory
        was on its way (a weight or status change racing a whole-user purge or the
        lifecycle purge). Then the rows still there are written, and a missing one is
        skipped when it is no longer live (its vector left with the purge) or queued for
        the reconcile, which re-embeds it, when it is."""
        mv = self.stores.milvus
        try:
            mv.client.upsert(mv.collection, rows, partial_update=True)
        except Exception:
            asked = {r["memory_id"] for r in rows}
            held = {r["memory_id"] for r in mv.get(sorted(asked), ["memory_id"])}
            if held >= asked:
                raise  # not a missing row: the caller's retry
            live = [r["memory_id"] for r in rows
                    if r["memory_id"] not in held and r["status"] in _LIVE_ROWS]  # fmt: skip
            if live:
                self.stores.redis.client.sadd(RECONCILE_KEY, *live)
            rows = [r for r in rows if r["memory_id"] in held]
            if rows:
                mv.client.upsert(mv.collection, rows, partial_update=True)
        mv.note_written(len(rows))
        return rows

    def _publish(self, batch: WriteBatch) -> None:
        events = change_events(batch, self.origin, self.stored_hash)
        topic = self.stores.kafka.topic(TOPIC_CHANGES)
        for event in events:
            try:
                self.stores.kafka.produce_json(topic, str(event["user_id"]), event)
            except StoreUnavailable:
                log.warning("memory.changes publish skipped: producer queue full")

    def _follow_up(self, batch: WriteBatch) -> None:
        """The batch's follow-up commands (a profile's LLM summary), now it is durable.
        One lost to a full queue only leaves the plan in place: the next change of the
        user's memories asks again."""
        topic = self.stores.kafka.topic(TOPIC_COMMANDS)
        for cmd in batch.followups:
            try:
                self.stores.kafka.produce_json(topic, str(cmd.user_id), cmd.model_dump(mode="json"))
            except StoreUnavailable:
                log.warning("follow-up command skipped: producer queue full")

    def stored_hash(self, m: MemoryRecord) -> str:
        """The dedup hash as it leaves the process (ClickHouse, ``memory.changes``): the
        content hash keyed by the user's data key (HMAC), so a purge's crypto-shredding
        makes it unlinkable to any text, and no reader of the store can confirm a guessed
        sentence with a plain sha256. In memory the plain hash is rebuilt from the
        decrypted content on load."""
        return self.cipher.blind(m.user_id, _HASH_DOMAIN + m.content_hash, m.tenant_id)

    def blind_tags(self, m: MemoryRecord) -> dict[str, str]:
        """The Milvus ``tags`` of a memory: blind-index tokens, never the tags."""
        return blind_tags(self.cipher, m.user_id, m.custom_tags, m.tenant_id)

    def _row(self, m: MemoryRecord, version: int) -> list[object]:
        u, t = m.user_id, m.tenant_id

        def seal(text: str) -> str:  # with this (tenant, user)'s data key
            return self.cipher.encrypt(u, text, t)

        values = {
            "tenant_id": t,
            "memory_id": m.memory_id,
            "user_id": m.user_id,
            "app_id": m.app_id,
            "session_id": m.session_id,
            "level": str(m.level),
            "ownership": str(m.ownership),
            "mem_type": str(m.mem_type),
            "content": seal(m.content),
            "content_hash": self.stored_hash(m),
            "weight": float(m.weight),
            "weight_at": m.weight_at,
            "status": str(m.status),
            "is_important": int(m.is_important),
            "recall_count": m.recall_count,
            "created_at": m.created_at,
            "updated_at": m.updated_at,
            "last_recalled_at": m.last_recalled_at,
            "expire_at": m.expire_at,
            "archived_at": m.archived_at,
            "deleted_at": m.deleted_at,
            "valid_at": m.valid_at,
            "invalid_at": m.invalid_at,
            "superseded_by": m.superseded_by,
            "source_session_id": m.source_session_id,
            "source_msg_id": seal(m.source_msg_id) if m.source_msg_id else m.source_msg_id,
            "source_msg_ids": [seal(i) for i in m.source_msg_ids],
            "custom_tags": seal(tags_json(m.custom_tags)) if m.custom_tags else "",
            "vector_ref": m.vector_ref,
            "version": version,
            "entities": seal(json.dumps(m.entities, ensure_ascii=False)) if m.entities else "",
        }
        return [values[c] for c in MEMORY_COLUMNS]

    def _entity_rows(self, batch: WriteBatch, version: int) -> list[list[object]]:
        """The ``memory_entities`` rows of a batch (docs/architecture.md#entities): each
        written memory's links with its status and validity now, and an UNLINKED row for
        each link an edit dropped. A purged memory's links leave with it (``_purge``)."""
        gone = set(batch.purge_ids)
        rows: list[list[object]] = []

        def row(m: MemoryRecord, link: EntityLink, status: str) -> list[object]:
            u, t = m.user_id, m.tenant_id
            if status == "UNLINKED":  # no words on a dropped link (a purge's shred)
                link = EntityLink(entity_id=link["entity_id"], name="", type=link["type"], said="")
            values = {
                "tenant_id": t,
                "user_id": u,
                "app_id": m.app_id,
                "memory_id": m.memory_id,
                "entity_id": link["entity_id"],
                "name": self.cipher.encrypt(u, link["name"], t) if link["name"] else "",
                "type": link["type"],
                "said": self.cipher.encrypt(u, link["said"], t) if link["said"] else "",
                "status": status,
                "valid_at": m.valid_at,
                "invalid_at": m.invalid_at,
                "version": version,
            }
            return [values[c] for c in ENTITY_COLUMNS]

        for m in batch.memories:  # a profile names its items' entities, links none
            if m.memory_id not in gone and m.mem_type not in DERIVED_TYPES:
                rows += [row(m, link, str(m.status)) for link in m.entities]
        for m, link in batch.unlinked:
            if m.memory_id not in gone:
                rows.append(row(m, link, "UNLINKED"))
        return rows

    def _change_row(self, c: ChangeRecord) -> list[object]:
        u, t = c.user_id, c.tenant_id
        values = {
            "tenant_id": t,
            "change_id": c.change_id,
            "memory_id": c.memory_id,
            "user_id": c.user_id,
            "app_id": c.app_id,
            "level": str(c.level),
            "op_type": str(c.op_type),
            "content_before": "" if c.sanitized else self.cipher.encrypt(u, c.content_before, t),
            "content_after": "" if c.sanitized else self.cipher.encrypt(u, c.content_after, t),
            "reason": c.reason,
            "op_source": str(c.op_source),
            "op_time": c.op_time,
            "task_id": c.task_id,
            "sanitized": int(c.sanitized),
        }
        return [values[col] for col in CHANGELOG_COLUMNS]

    # ------------------------------------------------------------------ reads
    def load(
        self,
        user_id: int,
        statuses: Iterable[Status] | None = None,
        memory_ids: Iterable[str] | None = None,
        *,
        tenant: str,
        mem_types: Iterable[MemType] | None = None,
    ) -> list[MemoryRecord]:
        """Current versions of a user's memories (FINAL), decrypted; see ``load_many``."""
        return self.load_many([user_id], statuses, memory_ids, tenant=tenant, mem_types=mem_types)

    def load_many(
        self,
        user_ids: list[int],
        statuses: Iterable[Status] | None = None,
        memory_ids: Iterable[str] | None = None,
        *,
        tenant: str,
        archived_above: float | None = None,
        mem_types: Iterable[MemType] | None = None,
    ) -> list[MemoryRecord]:
        """As ``load`` for several users of one tenant in one query; ``archived_above``:
        of the ARCHIVED ones only those whose stored weight is above it (the paged-out
        candidates, ``core.capacity.paged_out``). ``mem_types``: those kinds only; None:
        the user's own memories, without the derived ones (the profiles,
        docs/architecture.md#the-profile) and the keyed ones (the items,
        docs/architecture.md#key-value-items), unless ``memory_ids`` names them."""
        params: dict[str, object] = {}
        given = Given(params)
        given.add("status IN {st:Array(String)}", statuses, strs)
        given.add("memory_id IN {ids:Array(String)}", memory_ids, list)
        if mem_types is not None:
            given.add("mem_type IN {mt:Array(String)}", mem_types, strs)
        elif memory_ids is None:
            given.add("mem_type NOT IN {dt:Array(String)}", APART_TYPES, strs)
        given.add("(status != 'ARCHIVED' OR weight > {wa:Float64})", archived_above, float)
        # On a cluster this reads the Distributed table: each shard applies FINAL to its
        # own parts, which is correct because every version of a memory (and whatever
        # replaces it) is the same user's, sharded by the user onto one shard.
        cond = MemoryFilter.of(tenant, user_ids).where(params, *given.where)
        rows = self.stores.clickhouse.query_dicts(
            f"SELECT {_SELECT} FROM {self.db}.memories FINAL WHERE {cond}", params
        )
        if rows:
            self.cipher.prefetch(user_ids, tenant)
        return decode_rows(rows, self._record)

    def load_ids(self, memory_ids: list[str]) -> list[MemoryRecord]:
        """Current versions of these memories whoever holds them (system passes: re-embed,
        the model check); each opened with its own (tenant, user) key."""
        if not memory_ids:
            return []
        rows = self.stores.clickhouse.query_dicts(
            f"SELECT {_SELECT} FROM {self.db}.memories FINAL "
            "WHERE memory_id IN {ids:Array(String)}",
            {"ids": list(memory_ids)},
        )
        tenants: dict[str, set[int]] = {}
        for r in rows:
            tenants.setdefault(str(r["tenant_id"]), set()).add(int(r["user_id"]))
        for tenant, users in tenants.items():
            self.cipher.prefetch(users, tenant)
        return decode_rows(rows, self._record)

    def get(self, user_id: int, memory_id: str, *, tenant: str) -> MemoryRecord | None:
        found = self.load(user_id, memory_ids=[memory_id], tenant=tenant)
        return found[0] if found else None

    def ids(self, user_id: int, *, tenant: str) -> list[str]:
        """Every memory id the user has in ClickHouse, whatever its status (the ids a
        whole-user purge takes out of Milvus: deleted and superseded ones have vectors)."""
        params: dict[str, object] = {}
        where = MemoryFilter.of(tenant, user_id).where(params)
        rows = self.stores.clickhouse.query(
            f"SELECT DISTINCT memory_id FROM {self.db}.memories WHERE {where}", params
        )
        return [mid for (mid,) in rows]

    def archived_hashes(self, user_ids: list[int], *, tenant: str) -> dict[int, dict[str, str]]:
        """Per user, content_hash → memory_id of the ARCHIVED memories (one query); the
        hashes are rebuilt from the decrypted content (the stored ones are keyed)."""
        params: dict[str, object] = {}
        where = MemoryFilter.of(tenant, user_ids).where(params, "status = 'ARCHIVED'")
        rows = self.stores.clickhouse.query(
            f"SELECT user_id, content, memory_id FROM {self.db}.memories FINAL WHERE {where}",
            params,
        )
        out: dict[int, dict[str, str]] = {u: {} for u in user_ids}
        if rows:
            self.cipher.prefetch(user_ids, tenant)
        for user_id, sealed, mid in rows:
            text = self.cipher.open(int(user_id), sealed, tenant)
            if text:
                out[int(user_id)][content_hash(text)] = mid
        return out

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), 500):
            for row in self.stores.milvus.get(ids[start : start + 500], ["memory_id", "vector"]):
                out[row["memory_id"]] = np.asarray(row["vector"], dtype=np.float32)
        return out

    def _record(self, r: dict[str, Any]) -> MemoryRecord:
        u, t = int(r["user_id"]), str(r.get("tenant_id") or DEFAULT_TENANT)
        msg_id = r["source_msg_id"]
        return MemoryRecord(
            memory_id=r["memory_id"],
            user_id=u,
            tenant_id=t,
            content=(content := self.cipher.open(u, r["content"], t)),
            content_hash=content_hash(content) if content else "",
            level=Level(r["level"]),
            ownership=Ownership(r["ownership"]),
            mem_type=MemType(r["mem_type"]),
            weight=float(r["weight"]),
            weight_at=cast(datetime, instant(r, "weight_at")),  # NOT NULL
            created_at=cast(datetime, instant(r, "created_at")),  # NOT NULL
            updated_at=cast(datetime, instant(r, "updated_at")),  # NOT NULL
            valid_at=cast(datetime, instant(r, "valid_at")),  # NOT NULL
            app_id=r["app_id"],
            session_id=r["session_id"],
            status=Status(r["status"]),
            is_important=bool(r["is_important"]),
            recall_count=int(r["recall_count"]),
            last_recalled_at=instant(r, "last_recalled_at"),
            expire_at=instant(r, "expire_at"),
            archived_at=instant(r, "archived_at"),
            deleted_at=instant(r, "deleted_at"),
            invalid_at=instant(r, "invalid_at"),
            superseded_by=r["superseded_by"],
            source_session_id=r["source_session_id"],
            source_msg_id=(self._plain(u, msg_id, t) or None) if msg_id else msg_id,
            source_msg_ids=[
                i for i in (self._plain(u, i, t) for i in r.get("source_msg_ids") or ()) if i
            ],
            custom_tags=self.tags_of(u, r["custom_tags"], t),
            version=int(r["version"]),
            entities=self.entities_of(u, str(r.get("entities") or ""), t),
        )

    def entities_of(self, user_id: int, stored: str, tenant: str) -> list[EntityLink]:
        """A memory's entity links as stored (sealed JSON; none before v6 or once shredded)."""
        text = self._plain(user_id, stored, tenant) if stored else ""
        if not text:
            return []
        links = json.loads(text)
        out: list[EntityLink] = []
        for x in links:
            if isinstance(x, dict) and x.get("entity_id"):
                link = EntityLink(
                    entity_id=str(x["entity_id"]),
                    name=str(x.get("name") or ""),
                    type=str(x.get("type") or "other"),
                    said=str(x.get("said") or ""),
                )
                if x.get("relation"):
                    link["relation"] = str(x["relation"])
                out.append(link)
        return out

    def _plain(self, user_id: int, value: str, tenant: str) -> str:
        """A sealed value opened (``""`` once shredded), or a value of an older store."""
        return self.cipher.open(user_id, value, tenant) if is_ciphertext(value) else value

    def tags_of(self, user_id: int, stored: str, tenant: str) -> JsonObject:
        """``custom_tags`` as stored (sealed JSON; plain JSON in stores before v2)."""
        text = self._plain(user_id, stored or "", tenant)
        return clip_tags(json.loads(text)) if text else {}
