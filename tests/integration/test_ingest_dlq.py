"""Bad input lands on memory.dlq with the reason and its origin; the flow keeps going."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


def _dlq_messages(bootstrap: str, marker: bytes, expected: int, timeout: float = 40) -> list:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"dlq-{uuid.uuid4()}",
            "fetch.message.max.bytes": 8 * 1024 * 1024,
        }
    )
    consumer.assign([TopicPartition("memory.dlq", p, 0) for p in range(2)])
    found = []
    deadline = time.monotonic() + timeout
    while len(found) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error() and marker in (msg.value() or b"")[:4096]:
            found.append(msg)
    consumer.close()
    return found


def test_malformed_events_go_to_the_dlq_and_the_next_good_one_is_processed(
    runtime, ingest, servers, user_id
) -> None:
    marker = uuid.uuid4().hex.encode()
    pad = b"x" * (2 * 1024 * 1024)
    bad = {
        "not json": marker + b" this is not json",
        "missing user_id": json.dumps(
            {"m": marker.decode(), "messages": [{"role": "user", "content": "I like tea"}]}
        ).encode(),
        "wrong types": json.dumps(
            {"m": marker.decode(), "user_id": "abc", "messages": "hello"}
        ).encode(),
        "2 MB": b'{"m": "' + marker + b'", "user_id": 1, "pad": "' + pad + b'"}',
        "invalid utf-8": marker + b'{"user_id": 1, "messages": [\xff\xfe]}',
        "10,000 turns": json.dumps(
            {
                "m": marker.decode(),
                "user_id": user_id,
                "messages": [{"role": "user", "content": "turn"}] * 10000,
            }
        ).encode(),
    }
    producer = Producer(
        {"bootstrap.servers": servers.kafka_bootstrap, "message.max.bytes": 8 * 1024 * 1024}
    )
    for value in bad.values():
        producer.produce("memory.conversations", key=str(user_id).encode(), value=value)
    good_task = f"good-{user_id}"
    producer.produce(
        "memory.conversations",
        key=str(user_id).encode(),
        value=json.dumps(
            {
                "task_id": good_task,
                "user_id": user_id,
                "messages": [{"role": "user", "content": "I work as a nurse in Porto."}],
            }
        ).encode(),
    )
    assert producer.flush(20) == 0

    status = wait_for(
        lambda: (
            (s := runtime.tasks.get(good_task, tenant="default")) and s["status"] == "done" and s
        ),
        timeout=40,
        what="the good event after the bad ones",
    )
    assert status["counts"]["added"] == 1

    found = _dlq_messages(servers.kafka_bootstrap, marker, expected=len(bad))
    assert len(found) == len(bad)
    by_value = {m.value(): dict(m.headers()) for m in found}
    for name, value in bad.items():
        assert value in by_value, f"{name} missing from the DLQ (unchanged bytes)"
        headers = by_value[value]
        assert headers["error"], name
        assert headers["source_topic"] == b"memory.conversations"
        assert headers["source_partition"].isdigit() and headers["source_offset"].isdigit()
    reasons = {name: by_value[v]["error"].decode() for name, v in bad.items()}
    assert "not JSON" in reasons["not json"]
    assert "user_id" in reasons["missing user_id"]
    assert "user_id" in reasons["wrong types"] or "messages" in reasons["wrong types"]
    assert "max_event_bytes" in reasons["2 MB"]
    assert "UTF-8" in reasons["invalid utf-8"]
    assert "max_turns_per_event" in reasons["10,000 turns"]
