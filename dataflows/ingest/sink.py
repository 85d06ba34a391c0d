"""The ingest sink: one durable write per bytewax batch, then task results and the DLQ.

Order matters: memories and change-log rows are durable (ClickHouse, then Milvus)
before a task is reported done or a command's caller is answered.

A write that fails for the data of what it carries (a value a store or a driver cannot
take: ``guard.is_data_error``) is bisected: the halves are written alone until the
decisions that fail alone are found; each is dead-lettered (its Kafka records to
``memory.dlq`` with the reason, its tasks ``failed``, its users' hot entries dropped so
they reload from the stores) and the rest is stored (docs/operations.md#poison-records).
Writes are idempotent (deterministic ids, versions), so writing a half again is harmless.
An infrastructure error still raises: the flow restarts and nothing is lost.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from bytewax.outputs import DynamicSink, StatelessSinkPartition
from confluent_kafka import KafkaException

from core import metrics, tracing
from core.write_batch import WriteBatch
from dataflows.breaker import Breaker, Record
from dataflows.ingest.derive import derive
from dataflows.ingest.guard import describe, is_data_error
from dataflows.ingest.items import (
    REPLAY_HEADER,
    Applied,
    CommandResult,
    Rejected,
    Source,
    replay_of,
)
from dataflows.runtime import Runtime
from memstream.schemas.commands import result_key
from memstream.schemas.errors import ErrorCode
from memstream.schemas.events import TOPIC_DLQ
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.tenants import UserKey
from sinks.tasks import TaskResult

log = logging.getLogger(__name__)
T = TypeVar("T")
RESULT_TTL_S = 600
STORED = "its memories were stored before its status could not be written"
DLQ_KEEP_BYTES = 512 * 1024


def merge_applied(items: list[Applied]) -> Applied:
    """One batch for many users; a memory written twice keeps only its last version."""
    merged = Applied(WriteBatch())
    latest: dict[str, MemoryRecord] = {}
    for a in items:
        for m in a.batch.memories:
            latest.pop(m.memory_id, None)
            latest[m.memory_id] = m
        merged.batch.vectors.update(a.batch.vectors)
        merged.batch.changes.extend(a.batch.changes)
        merged.batch.milvus_deletes.extend(a.batch.milvus_deletes)
        merged.batch.purge_ids.extend(a.batch.purge_ids)
        merged.batch.shred_users.extend(a.batch.shred_users)
        merged.batch.unlinked.extend(a.batch.unlinked)
        merged.batch.sanitize_cited.extend(a.batch.sanitize_cited)
        merged.batch.followups.extend(a.batch.followups)
        merged.results.extend(a.results)
        merged.command_results.extend(a.command_results)
        merged.rejected.extend(a.rejected)
        merged.sources.extend(a.sources)
    merged.batch.memories = list(latest.values())
    return merged


def runs(items: list[Applied]) -> list[list[Applied]]:
    """Split a sink batch at each crypto-shredding purge, which is written alone: what
    came before it is sealed (and shredded) under the old key, what follows under a new
    one — merged into one write, both would be sealed after the destroy."""
    out: list[list[Applied]] = [[]]
    for a in items:
        if a.batch.shred_users:
            out += [[a], []]
        else:
            out[-1].append(a)
    return [r for r in out if r]


def send_to_dlq(rt: Runtime, rejected: list[Rejected]) -> None:
    bus = rt.stores.kafka
    for bad in rejected:
        src = bad.source
        headers = {
            "error": bad.reason.encode("utf-8"),
            "source_topic": src.topic.encode(),
            "source_partition": str(src.partition).encode(),
            "source_offset": str(src.offset).encode(),
        }
        if src.replay_of is not None:
            headers[REPLAY_HEADER] = src.replay_of.encode()
        value = src.value
        try:
            bus.producer.produce(
                bus.topic(TOPIC_DLQ), key=src.key, value=value, headers=list(headers.items())
            )
        except KafkaException as exc:  # too large for the broker: keep the head and say so
            if value is None or len(value) <= DLQ_KEEP_BYTES:
                raise
            headers["value_truncated_from"] = str(len(value)).encode()
            log.warning("DLQ value truncated", extra={"fields": {"error": str(exc)[:200]}})
            bus.producer.produce(
                bus.topic(TOPIC_DLQ),
                key=src.key,
                value=value[:DLQ_KEEP_BYTES],
                headers=list(headers.items()),
            )
        log.warning(
            "sent to DLQ",
            extra={
                "fields": {
                    "reason": bad.reason[:300],
                    "source_topic": src.topic,
                    "source_partition": src.partition,
                    "source_offset": src.offset,
                }
            },
        )
    if rejected:
        bus.flush(10)


def dead_letter_messages(rt: Runtime, messages: list[Record], reason: str) -> None:
    """Kafka records the breaker blamed, to ``memory.dlq``."""
    send_to_dlq(
        rt,
        [
            Rejected(
                reason,
                Source(
                    m.topic or "",
                    m.partition or 0,
                    m.offset or 0,
                    m.key,
                    m.value,
                    0.0,
                    replay_of(m.headers),
                ),
            )
            for m in messages
        ],
    )
    metrics.INGEST.dlq.inc(len(messages))


def _sink_stage(part: str):
    return metrics.ingest_stage(f"sink_{part}")


class _Partition(StatelessSinkPartition[Applied]):
    def __init__(self, rt: Runtime, breaker: Breaker | None = None):
        self.rt = rt
        self.breaker = breaker

    def write_batch(self, items: list[Applied]) -> None:
        for run in runs(items):
            self._write_or_split(run)

    def _write_or_split(self, items: list[Applied]) -> None:
        try:
            self._write(items)
        except Exception as exc:
            if not is_data_error(exc):
                raise
            if len(items) > 1:
                half = len(items) // 2
                self._write_or_split(items[:half])
                self._write_or_split(items[half:])
            else:
                stored = STORED in getattr(exc, "__notes__", ())
                self._dead_letter(
                    items[0], describe("sink", exc) + (f" ({STORED})" if stored else "")
                )

    def _write(self, items: list[Applied]) -> None:
        merged = merge_applied(items)
        with metrics.ingest_stage("sink_profile"):  # its users' profiles, in the same write
            derive(self.rt, merged.batch, datetime.now(UTC))
        # one write, many adds: a span of its own, linked to their traces (core.tracing)
        traces = (s.trace for s in merged.sources)
        with tracing.batch("ingest.sink", traces, items=len(items), results=len(merged.results)):
            self._stored(items, merged)

    def _stored(self, items: list[Applied], merged: Applied) -> None:
        self.rt.memories.write(merged.batch, _sink_stage)
        with metrics.ingest_stage("sink_tasks"):
            try:
                self.rt.tasks.finish(merged.results)
                self._answer(merged.command_results)
            except Exception as exc:
                exc.add_note(STORED)  # the DLQ reason must not say "not stored"
                raise
            send_to_dlq(self.rt, merged.rejected)
        m = metrics.INGEST  # durable now: count what this write made so
        m.batch_sink.observe(len(items))
        m.dlq.inc(len(merged.rejected))
        m.failed.inc(sum(1 for r in merged.results if r.failed))
        for a in items:
            m.out.inc(len(a.event_s))
            m.fresh_since(a.event_s)
        self._done(merged)
        self.rt.stores.kafka.producer.poll(0)

    def _answer(self, command_results: list[tuple[str, CommandResult]]) -> None:
        if command_results:
            pipe = self.rt.stores.redis.client.pipeline()
            for result_id, result in command_results:
                key = result_key(result_id)
                pipe.rpush(key, json.dumps(result, default=str))
                pipe.expire(key, RESULT_TTL_S)
            pipe.execute()

    def _dead_letter(self, bad: Applied, reason: str) -> None:
        """``bad`` failed alone for its data: its records go to the DLQ, its tasks end
        failed and its callers are answered, where their own ids can still be written (an
        id that broke the write is skipped, and logged). Its memories are not stored when
        a store refused them; when only its status or answer could not be written, they
        are, and the reason says so (a replay after a fix writes the same ids again)."""
        log.warning("a write failed for its data alone", extra={"fields": {"reason": reason}})
        users = {UserKey(r.tenant_id, r.user_id) for r in bad.results}
        users.update(UserKey(m.tenant_id, m.user_id) for m in bad.batch.memories)
        for user in users:  # the writer updated them ahead of the write that failed
            self.rt.cache.invalidate(user.user_id, tenant=user.tenant)
        msg = f"the command was refused: {reason}"
        answer: CommandResult = {"code": int(ErrorCode.BAD_PARAMETER), "msg": msg}
        for r in bad.results:
            failed = TaskResult(
                r.task_id,
                r.user_id,
                failed=True,
                code=int(ErrorCode.BAD_PARAMETER),
                reason=reason,
                tenant_id=r.tenant_id,
            )
            _unless_data_error(self.rt.tasks.finish, [failed])
        for result_id, _ in bad.command_results:
            _unless_data_error(self._answer, [(result_id, answer)])
        refused = {(r.source.topic, r.source.partition, r.source.offset) for r in bad.rejected}
        rejected = [
            Rejected(reason, src)
            for src in bad.sources
            if (src.topic, src.partition, src.offset) not in refused
        ] + bad.rejected
        send_to_dlq(self.rt, rejected)
        metrics.INGEST.dlq.inc(len(rejected))
        if not rejected:
            log.error("a write failed for its data, and no Kafka record stands for it")
        self._done(bad)

    def _done(self, applied: Applied) -> None:
        if self.breaker is not None:
            self.breaker.done(
                (s.topic, s.partition, s.offset)
                for s in [*applied.sources, *(r.source for r in applied.rejected)]
            )


def _unless_data_error(write: Callable[[list[T]], None], arg: list[T]) -> None:
    try:
        write(arg)
    except Exception as exc:
        if not is_data_error(exc):
            raise
        log.warning(
            "a result could not be written", extra={"fields": {"error": type(exc).__name__}}
        )


class MemorySink(DynamicSink[Applied]):
    def __init__(self, rt: Runtime, breaker: Breaker | None = None):
        self.rt = rt
        self.breaker = breaker

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Partition:
        return _Partition(self.rt, self.breaker)
