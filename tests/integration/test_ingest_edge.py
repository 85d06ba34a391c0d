"""Kafka input past the edge's rules goes to the DLQ with the reason; a task the API
accepted and the ingest then refused reads ``failed`` with that reason."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Producer

from tests.helpers.waiting import wait_for
from tests.integration.test_ingest_dlq import _dlq_messages

pytestmark = pytest.mark.integration


def test_key_mismatch_and_refused_accepted_tasks(runtime, ingest, servers, user_id) -> None:
    marker = uuid.uuid4().hex
    turns = [{"role": "user", "content": f"{marker} I grow tomatoes"}]
    cases = {
        "key of another user": (str(user_id + 1), {"user_id": user_id}, "does not match user_id"),
        "user_id true": ("1", {"user_id": True}, "user_id"),
        "event over max_event_bytes": (
            str(user_id),
            {"user_id": user_id, "pad": "x" * (runtime.settings.max_event_bytes + 10)},
            "max_event_bytes",
        ),
        "tags 9 levels deep": (
            str(user_id),
            {"user_id": user_id, "strategy": {"tags": json.loads('{"a":' * 9 + "1" + "}" * 9)}},
            "deeper than 8",
        ),
    }
    producer = Producer(
        {"bootstrap.servers": servers.kafka_bootstrap, "message.max.bytes": 8 * 1024 * 1024}
    )
    tasks = {}
    for name, (key, body, _) in cases.items():
        task_id = f"t_edge_{uuid.uuid4().hex[:12]}"
        tasks[name] = task_id
        runtime.tasks.accepted(
            task_id, user_id, tenant="default"
        )  # as the API does before producing
        value = json.dumps({"task_id": task_id, "messages": turns, **body}).encode()
        producer.produce("memory.conversations", key=key.encode(), value=value)
    assert producer.flush(20) == 0

    for name, (_, _, reason) in cases.items():
        status = wait_for(
            lambda t=tasks[name]: (
                (s := runtime.tasks.get(t, tenant="default")) and s["status"] == "failed" and s
            ),
            timeout=40,
            what=f"task of '{name}' failed",
        )
        assert status["code"] == 40001 and reason in status["reason"], (name, status)
        assert marker not in status["reason"]

    found = _dlq_messages(servers.kafka_bootstrap, marker.encode(), expected=len(cases))
    assert len(found) == len(cases)
    reasons = sorted(dict(m.headers())["error"].decode() for m in found)
    for _, _, reason in cases.values():
        assert any(reason in r for r in reasons), (reason, reasons)
    assert all(marker not in r for r in reasons)
    assert runtime.memories.load(user_id, tenant="default") == []
