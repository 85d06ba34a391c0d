"""The ingest sink: one durable write per bytewax batch, then task results and the DLQ.

Order matters: memories and change-log rows are durable (ClickHouse, then Milvus)
before a task is reported done or a command's caller is answered.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from bytewax.outputs import DynamicSink, StatelessSinkPartition
from confluent_kafka import KafkaException

from core import metrics
from core.write_batch import WriteBatch
from dataflows.ingest.items import Applied, Rejected
from dataflows.runtime import Runtime
from schemas.commands import result_key
from schemas.events import TOPIC_DLQ

log = logging.getLogger(__name__)
RESULT_TTL_S = 600
DLQ_KEEP_BYTES = 512 * 1024


def merge_applied(items: list[Applied]) -> Applied:
    """One batch for many users; a memory written twice keeps only its last version."""
    merged = Applied(WriteBatch())
    latest: dict[str, Any] = {}
    for a in items:
        for m in a.batch.memories:
            latest.pop(m.memory_id, None)
            latest[m.memory_id] = m
        merged.batch.vectors.update(a.batch.vectors)
        merged.batch.changes.extend(a.batch.changes)
        merged.batch.milvus_deletes.extend(a.batch.milvus_deletes)
        merged.batch.purge_ids.extend(a.batch.purge_ids)
        merged.batch.shred_users.extend(a.batch.shred_users)
        merged.results.extend(a.results)
        merged.command_results.extend(a.command_results)
        merged.rejected.extend(a.rejected)
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


def _sink_stage(part: str):
    return metrics.ingest_stage(f"sink_{part}")


class _Partition(StatelessSinkPartition[Applied]):
    def __init__(self, rt: Runtime):
        self.rt = rt

    def write_batch(self, items: list[Applied]) -> None:
        for run in runs(items):
            self._write(run)

    def _write(self, items: list[Applied]) -> None:
        merged = merge_applied(items)
        self.rt.memories.write(merged.batch, _sink_stage)
        with metrics.ingest_stage("sink_tasks"):
            send_to_dlq(self.rt, merged.rejected)
            self.rt.tasks.finish(merged.results)
        m = metrics.INGEST  # durable now: count what this write made so
        m.batch_sink.observe(len(items))
        m.dlq.inc(len(merged.rejected))
        m.failed.inc(sum(1 for r in merged.results if r.failed))
        for a in items:
            m.out.inc(len(a.event_s))
            m.fresh_since(a.event_s)
        if merged.command_results:
            pipe = self.rt.stores.redis.client.pipeline()
            for result_id, result in merged.command_results:
                key = result_key(result_id)
                pipe.rpush(key, json.dumps(result, default=str))
                pipe.expire(key, RESULT_TTL_S)
            pipe.execute()
        self.rt.stores.kafka.producer.poll(0)


class MemorySink(DynamicSink[Applied]):
    def __init__(self, rt: Runtime):
        self.rt = rt

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Partition:
        return _Partition(self.rt)
