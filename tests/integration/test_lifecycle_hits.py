"""Recall hits through Kafka: memory.recall_hits → lifecycle flow → keyed writer → stores."""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.helpers.lifecycle import record, seed
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


def _produce(bootstrap: str, key: str, *values: bytes) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce("memory.recall_hits", key=key.encode(), value=value)
    assert producer.flush(15) == 0


def test_recall_hits_recover_weight_and_count_recalls(
    runtime, ingest, lifecycle, servers, user_id
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    (m,) = seed(runtime, record(user_id, "I grow tomatoes", weight_at=now - timedelta(days=60)))
    hit = {"user_id": user_id, "memory_ids": [m.memory_id, m.memory_id], "at": now.isoformat()}
    _produce(servers.kafka_bootstrap, str(user_id), json.dumps(hit).encode())

    def recovered():
        found = runtime.memories.get(user_id, m.memory_id, tenant="default")
        return found if found.recall_count else None

    got = wait_for(recovered, timeout=40, what="the recall hit to be applied")
    assert got.recall_count == 2 and got.last_recalled_at == now and got.weight_at == now
    assert got.weight == pytest.approx(0.8 * 8 ** (-60 / 90) + 0.1, rel=1e-3)  # 0.2 + Δ
    assert runtime.cache.get(user_id, tenant="default").records[m.memory_id].recall_count == 2


def test_a_malformed_hit_goes_to_the_dlq(runtime, ingest, lifecycle, servers, user_id) -> None:
    marker = uuid.uuid4().hex
    _produce(servers.kafka_bootstrap, str(user_id), f'{{"user_id": "{marker}"'.encode())
    consumer = Consumer({"bootstrap.servers": servers.kafka_bootstrap, "group.id": marker})
    consumer.assign([TopicPartition("memory.dlq", p, 0) for p in range(2)])
    found = None
    deadline = time.monotonic() + 40
    while found is None and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error() and marker.encode() in (msg.value() or b""):
            found = msg
    consumer.close()
    assert found is not None, "no DLQ message for the malformed hit"
    headers = {k: v.decode() for k, v in found.headers()}
    assert headers["source_topic"] == "memory.recall_hits" and "JSON" in headers["error"]
