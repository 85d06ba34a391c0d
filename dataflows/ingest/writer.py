"""The keyed writer: one user's facts become memory mutations, in order
(docs/architecture.md#the-write-path).

For each fact: exact dedup by content hash (against the user's active memories and the
batch so far) → evolution against the top-10 similar memories of the same scope (LLM
``decide``, append, or the degrade path) → ADD / UPDATE / SUPERSEDE / NONE → capacity
check with eviction. The user's hot index is updated at once, so the next fact of the
same batch sees this one; the returned WriteBatch is made durable by the sink.

Ids are deterministic (task id + fact position; a second ADD of the same fact's
decisions gets the fact's id + its position in the answer), so a replay after a crash
finds its own earlier write by hash and id and writes nothing twice.

A memory evicted to ARCHIVED is paged out (``core.capacity.paged_out``): its row moves to
the user's ``paged`` index, where default recall still finds it.

A fact whose hash matches an ARCHIVED memory of the user is that memory said again: it
is restored (ACTIVE, initial weight, decay anchor now, a RESTORE change row) instead of
stored twice. DELETED memories are not restored: a deletion is the user's or the
eviction's word, and a fact said after it is a new memory.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from datetime import UTC, date, datetime, time
from typing import cast

import numpy as np

from core import metrics
from core.capacity import (
    Counters,
    delta_for,
    paged_out,
    plan_admission,
)
from core.hashing import content_hash, stable_id
from core.settings import Settings
from core.user_index import Decoded, UserIndex
from core.weights import initial_weight
from core.write_batch import WriteBatch
from dataflows.ingest.consolidate import make_room
from dataflows.ingest.entities import declared_types, linked
from dataflows.ingest.items import Applied, Extracted, FactItem
from dataflows.ingest.recorder import Recorder
from dataflows.runtime import Runtime
from memstream.schemas.enums import Level, OpType, Status
from memstream.schemas.errors import ErrorCode
from memstream.schemas.events import ConversationEvent
from memstream.schemas.facts import Decision, Similar
from memstream.schemas.memory import MemoryRecord
from models.degrade import decide_or_degrade
from models.rules.entities import conversation_speakers
from sinks.tasks import TaskResult

log = logging.getLogger(__name__)


def counters_of(idx: UserIndex) -> Counters:
    """Capacity counters of the user's ACTIVE memories, from the hot index (no store query)."""
    counters = Counters()
    for (level, app_id, important), n in idx.scope_counts().items():
        counters.apply({k: d * n for k, d in delta_for(level, app_id, important).items()})
    return counters


def same_scope(rec: MemoryRecord, level: Level, app_id: str | None, session_id: str | None) -> bool:
    if rec.level is not level or (rec.app_id or None) != (app_id or None):
        return False
    return level is not Level.SESSION or rec.session_id == session_id


def exact_duplicate(idx: UserIndex, fi: FactItem, text_hash: str) -> str | None:
    """The held memory the writer skips ``fi`` for: the same words where it dedups."""
    ev = fi.incoming.event
    return idx.by_hash.find(text_hash, duplicate_scope(_level(ev), ev.app_id, ev.session_id))


def duplicate_scope(
    level: Level, app_id: str | None, session_id: str | None
) -> Callable[[MemoryRecord], bool]:
    """Which held memories a new one of this scope may be a duplicate of: those its writer
    sees — the same scope (same app for APP, same session for SESSION) and GLOBAL, which
    every scope sees. Another app's or session's memory is never named, skipped for or
    written into (an existence oracle, and the writer's data lost)."""

    def keep(rec: MemoryRecord) -> bool:
        return rec.level is Level.GLOBAL or same_scope(rec, level, app_id, session_id)

    return keep


def _said_at(fi: FactItem, now: datetime) -> datetime:
    """When the fact's message was said: its ts, else the event's, else ``now``."""
    ev = fi.incoming.event
    msg = ev.messages[fi.fact.msg_index] if fi.fact.msg_index < len(ev.messages) else None
    said = (msg.ts if msg is not None and msg.ts else None) or ev.ts or now
    return said if said.tzinfo is not None else said.replace(tzinfo=UTC)


def _end_of_day(d: date | None) -> datetime | None:
    return None if d is None else datetime.combine(d, time(23, 59, 59), tzinfo=UTC)


def _replayed(r: TaskResult, memory_id: str) -> None:
    """A replay of this fact's own earlier ADD: nothing is written again, and the result
    says what the task did, since it is the one recorded when the first attempt's status
    was lost (Redis down between the durable write and the status, then a restart)."""
    r.added += 1
    r.memory_ids.append(memory_id)


class Writer:
    """Applies one user's inputs; holds no state of its own (the hot index is the state)."""

    def __init__(self, rt: Runtime):
        self.rt = rt

    @property
    def s(self) -> Settings:
        """The runtime's settings as they are now (live thresholds: sinks.config_topic)."""
        return self.rt.settings

    def apply_extracted(self, item: Extracted, now: datetime | None = None) -> Applied:
        now = now or datetime.now(UTC)
        results = {
            i.task_id: TaskResult(i.task_id, item.user_id, tenant_id=item.tenant_id)
            for i in item.tasks
        }
        out = Applied(WriteBatch(), list(results.values()), rejected=list(item.failures))
        for bad in item.failures:
            r = results[bad.task_id or ""]
            r.failed, r.code, r.reason = True, int(ErrorCode.EXTRACTION_FAILED), bad.reason
        idx = self.rt.cache.get(item.user_id, tenant=item.tenant_id)
        with idx.lock:
            rc = Recorder(out.batch, now, "", idx, counters_of(idx))
            for fi in item.facts:
                self._apply_fact(rc.of(fi.task_id, results[fi.task_id]), fi)
        return out

    # ------------------------------------------------------------------ one fact
    def _apply_fact(self, rc: Recorder, fi: FactItem) -> None:
        """``rc``: this fact's task (its cause and result), the batch, index and counters."""
        idx, r, now = rc.idx, rc.result, rc.now
        assert idx is not None and r is not None
        ev = fi.incoming.event
        text = fi.fact.text.strip()
        h = content_hash(text)
        if fi.memory_id in idx:
            _replayed(r, fi.memory_id)
            return
        existing = exact_duplicate(idx, fi, h)
        dormant = idx.dormant.get(h)
        if existing is None and dormant is not None:
            if self._restore(rc, fi, dormant):
                return
        if existing is not None:
            r.skipped += 1
            reason = f"exact duplicate of {existing}"
            rc.note(idx.records[existing], OpType.NONE, reason, key=fi.memory_id, after=text)
            return
        decisions = [Decision(op=OpType.ADD, text=text)]
        strategy = ev.strategy
        if strategy is None or strategy.evolution == "decide":
            seen: Decoded = {}  # what the search decoded for ``keep``: read-only records
            similar = idx.dense(
                _vector(fi),
                self.s.evolution_top_k,
                keep=lambda rec: same_scope(rec, _level(ev), ev.app_id, ev.session_id),
                memo=seen,
            )
            if similar:
                offered = [
                    Similar(mid, rec.content, score, merged=len(rec.msg_ids) > 1)
                    for mid, score in similar
                    for rec in (seen.get(mid) or idx.records[mid],)
                ]
                res = decide_or_degrade(self.rt.llm, fi.fact, offered)
                decisions = res.decisions
                r.degraded = r.degraded or res.degraded
        new_id = fi.memory_id  # the first ADD's id: what a DELETE is superseded by
        adds = 0
        for seq, d in enumerate(decisions):
            if d.op is OpType.ADD:
                mid = fi.memory_id if adds == 0 else stable_id("m_", fi.memory_id, seq)
                adds += 1
                self._add(rc, fi, d.text or text, mid)
            elif d.op is OpType.UPDATE:
                self._update(rc, fi, d, seq)
            elif d.op is OpType.DELETE:
                self._supersede(rc, fi, d, new_id, seq)
            else:
                r.skipped += 1
                target = idx.records.get(d.target_id or "")
                anchor = target or self._record(fi, text, now)
                reason = f"same meaning as {d.target_id or 'existing memory'}"
                rc.note(anchor, OpType.NONE, reason, key=new_id, after=text, seq=seq)

    def _record(
        self, fi: FactItem, text: str, now: datetime, memory_id: str | None = None
    ) -> MemoryRecord:
        ev = fi.incoming.event
        valid_at = _said_at(fi, now)
        tags = dict(ev.strategy.tags) if ev.strategy else {}
        expire_at = _end_of_day(fi.fact.expire_at)
        if expire_at is not None and expire_at <= now:
            expire_at = None  # a plan of an imported old chat is a past event: keep it
        return MemoryRecord(
            memory_id=memory_id or fi.memory_id,
            user_id=ev.user_id,
            tenant_id=ev.tenant_id,
            content=text,
            content_hash=content_hash(text),
            level=_level(ev),
            ownership=ev.ownership,
            mem_type=fi.fact.mem_type,
            weight=initial_weight(
                ev.ownership, fi.fact.mem_type, self.s, time_bound=fi.fact.time_bound
            ),
            weight_at=now,
            created_at=now,
            updated_at=now,
            valid_at=valid_at,
            app_id=ev.app_id,
            session_id=ev.session_id if ev.level is Level.SESSION else None,
            expire_at=expire_at,
            source_session_id=ev.session_id,
            source_msg_id=fi.fact.msg_id,
            custom_tags=tags,
        )

    def _add(self, rc: Recorder, fi: FactItem, text: str, memory_id: str) -> None:
        r = rc.result
        assert rc.idx is not None and r is not None
        if memory_id in rc.idx:
            _replayed(r, memory_id)
            return
        rec = self._linked(rc, fi, self._record(fi, text, rc.now, memory_id))
        if not self.admit(rc, rec):
            return
        vector = _vector(fi) if text == fi.fact.text.strip() else self._embed(text)
        rc.add(rec, vector, "extracted")
        r.added += 1
        r.memory_ids.append(rec.memory_id)

    def _restore(self, rc: Recorder, fi: FactItem, memory_id: str) -> bool:
        """An archived memory said again in its own scope comes back (same id, fresh
        weight and anchor); False when there is none to restore (store the fact anew)."""
        ev, now, r = fi.incoming.event, rc.now, rc.result
        assert rc.idx is not None and r is not None
        old = self.rt.memories.get(ev.user_id, memory_id, tenant=ev.tenant_id)
        if old is None or old.status is not Status.ARCHIVED:
            rc.idx.dormant.pop(content_hash(fi.fact.text.strip()), None)  # stale
            return False
        if not same_scope(old, _level(ev), ev.app_id, ev.session_id):
            return False  # another app's or session's: never restored by this writer
        fresh = self._record(fi, old.content, now)
        rec = dataclasses.replace(
            old,
            status=Status.ACTIVE,
            weight=max(
                fresh.weight,
                initial_weight(old.ownership, old.mem_type, self.s, is_important=old.is_important),
            ),
            weight_at=now,
            updated_at=now,
            archived_at=None,
            expire_at=fresh.expire_at,
            source_msg_ids=[*old.msg_ids, *(m for m in fresh.msg_ids if m not in old.msg_ids)],
        )
        if not self.admit(rc, rec):
            return True  # refused for capacity: the result says so
        rc.restore(rec, _vector(fi), f"said again (fact {fi.memory_id})")
        r.updated += 1
        r.memory_ids.append(rec.memory_id)
        return True

    def _update(self, rc: Recorder, fi: FactItem, d: Decision, seq: int) -> None:
        assert rc.idx is not None and rc.result is not None
        old = rc.idx.records.get(d.target_id or "")
        text = (d.text or "").strip()
        if old is None or not text:
            rc.result.skipped += 1
            return
        now = rc.now
        rec = dataclasses.replace(
            old,
            content=text,
            content_hash=content_hash(text),
            updated_at=now,
            weight_at=now,
            weight=max(
                old.weight,
                initial_weight(old.ownership, old.mem_type, self.s, is_important=old.is_important),
            ),
        )
        rec = self._linked(rc, fi, rec)
        vector = _vector(fi) if text == fi.fact.text.strip() else self._embed(text)
        rc.update(old, rec, vector, f"merged with fact {fi.memory_id}", seq=seq)
        rc.result.updated += 1
        rc.result.memory_ids.append(rec.memory_id)

    def _supersede(self, rc: Recorder, fi: FactItem, d: Decision, new_id: str, seq: int) -> None:
        assert rc.idx is not None and rc.result is not None
        old = rc.idx.records.get(d.target_id or "")
        if old is None:
            return
        # Bi-temporal: true until the contradicting fact was said (an imported chat's
        # message time), never before the old memory itself became valid.
        now = rc.now
        ended_at = min(_said_at(fi, now), now)
        if old.valid_at is not None:
            ended_at = max(ended_at, old.valid_at)
        rec = dataclasses.replace(
            old, status=Status.SUPERSEDED, invalid_at=ended_at, superseded_by=new_id, updated_at=now
        )
        reason = f"contradicted by {new_id}"
        rc.retire(
            old, rec, OpType.SUPERSEDE, reason, before=old.content, after=fi.fact.text, seq=seq
        )
        rc.result.superseded += 1

    def _linked(self, rc: Recorder, fi: FactItem, rec: MemoryRecord) -> MemoryRecord:
        """``rec`` with the entities its words name (docs/architecture.md#entities); an
        entity type the rules ignore is a warning in the task's answer."""
        assert rc.idx is not None and rc.result is not None
        ev = fi.incoming.event
        speakers = conversation_speakers(ev.messages)
        types = declared_types(self.s, ev.app_id, ev.strategy)
        rec, warnings = linked(rec, rc.idx, types, speakers, fi.fact.entities)
        rc.result.warn(warnings)
        return rec

    # ------------------------------------------------------------------ capacity
    def admit(self, rc: Recorder, rec: MemoryRecord) -> bool:
        """Make room for ``rec`` (merging, then evicting:
        docs/architecture.md#consolidation-and-paged-out-memories) or refuse it with
        42901 (``rc.result`` says so); ``rc`` holds the user's index and counters."""
        idx, counters, r, now = rc.idx, rc.counters, rc.result, rc.now
        assert idx is not None and counters is not None and r is not None
        make_room(self.rt, rc, rec)  # consolidate a full scope first
        settings = self.s.for_app(rec.app_id)

        # a generator, read only when a dimension is full (a list of every decoded record
        # per add was 61 % of the write step with the capacity lifted, bench ingest --dataset)
        candidates = idx.eviction_candidates(now, settings)
        plan = plan_admission(counters, rec.level, rec.app_id, candidates, settings)
        if not plan.allowed:
            r.failed, r.code = True, int(ErrorCode.CAPACITY_FULL)
            r.reason = f"capacity full after eviction ({', '.join(plan.blocked_by)})"
            return False
        for ev in plan.evictions:
            old = idx.records[ev.memory_id]
            status = ev.to_status
            evicted = dataclasses.replace(
                old,
                status=status,
                weight=ev.weight,
                weight_at=now,
                updated_at=now,
                archived_at=now if status is Status.ARCHIVED else old.archived_at,
                deleted_at=now if status is Status.DELETED else old.deleted_at,
            )
            op = OpType.ARCHIVE if status is Status.ARCHIVED else OpType.DELETE
            reason = f"capacity eviction ({ev.dimension} full)"
            # paged out: default recall still finds it
            rc.retire(old, evicted, op, reason, page=paged_out(evicted, now, self.s))
            r.evicted += 1
            (
                metrics.EVICTED_ARCHIVED if status is Status.ARCHIVED else metrics.EVICTED_DELETED
            ).inc()
        return True

    def _embed(self, text: str) -> np.ndarray:
        return self.rt.embedder.embed([text])[0]


def _level(ev: ConversationEvent) -> Level:
    return cast(Level, ev.level)  # never None: ConversationEvent's validator sets it


def _vector(fi: FactItem) -> np.ndarray:
    if fi.vector is None:  # the embed step gives every fact one
        raise ValueError(f"fact {fi.memory_id} reached the writer without a vector")
    return fi.vector
