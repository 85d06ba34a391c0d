"""An imported 2023 chat through real Kafka: who said it, when, and nothing said is lost.

Rules provider (the default). Each message carries the speaker's ``name`` and its ``ts``
(or only the event has a ``ts``): the memories name the speaker, their relative dates
resolve in 2023 (never against the clock), ``valid_at`` is the time the message was said
and ``created_at`` the time it was stored. A turn with content but no first-person fact
is one EPISODIC memory; chit-chat leaves nothing.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from confluent_kafka import Producer

from memstream.schemas.enums import MemType, Status
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

SAID = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)  # a Monday
LATER = datetime(2023, 6, 1, 10, 0, tzinfo=UTC)  # the Chinese chat's event time


def _turn(n: int, role: str, name: str, text: str, ts: datetime | None) -> dict:
    turn = {"role": role, "name": name, "content": text, "msg_id": f"p{n}"}
    if ts is not None:
        turn["ts"] = ts.isoformat()
    return turn


def _produce(bootstrap: str, events: list[dict]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for e in events:
        producer.produce(
            "memory.conversations", key=str(e["user_id"]).encode(), value=json.dumps(e)
        )
    assert producer.flush(15) == 0


def _done(runtime, task_id: str):
    status = runtime.tasks.get(task_id, tenant="default")
    return status if status and status["status"] in ("done", "failed") else None


def test_an_imported_2023_chat_names_the_speakers_and_keeps_its_dates(
    runtime, ingest, api, servers, user_id
) -> None:
    minute = timedelta(minutes=1)
    english = {
        "task_id": f"nd-en-{user_id}",
        "user_id": user_id,
        "messages": [
            _turn(0, "user", "Priya", "Hi Tomás! I started a pottery class yesterday.", SAID),
            _turn(1, "assistant", "Tomás", "Wow, cool! How was it?", SAID + minute),
            _turn(
                2,
                "user",
                "Priya",
                "That class last night was amazing! The teacher is from Kyoto.",
                SAID + 2 * minute,
            ),
            _turn(3, "user", "Priya", "Haha, thanks so much!", SAID + 3 * minute),
        ],
    }
    chinese = {
        "task_id": f"nd-zh-{user_id}",
        "user_id": user_id,
        "ts": LATER.isoformat(),  # the messages have none: they were said then
        "messages": [
            _turn(4, "user", "王芳", "你好！我昨天开始学书法", None),
            _turn(5, "user", "王芳", "哈哈，公司下个月要搬到杭州", None),
            _turn(6, "user", "王芳", "好的", None),
        ],
    }
    before = datetime.now(UTC)
    _produce(servers.kafka_bootstrap, [english, chinese])
    for event in (english, chinese):
        status = wait_for(lambda e=event: _done(runtime, e["task_id"]), what=event["task_id"])
        assert status["status"] == "done", status
        assert status["counts"]["added"] == 2, status

    mems = {
        m.source_msg_id: m
        for m in runtime.memories.load(user_id, statuses=[Status.ACTIVE], tenant="default")
    }
    assert {k: m.content for k, m in mems.items()} == {
        "p0": "Priya started a pottery class on 2023-05-07",
        "p2": (
            "Priya said on 2023-05-08: That class on the night of 2023-05-07 was amazing. "
            "The teacher is from Kyoto"
        ),
        "p4": "王芳2023-05-31开始学书法",
        "p5": "王芳在2023-06-01说：公司2023年7月要搬到杭州",
    }
    assert mems["p2"].mem_type is MemType.EPISODIC and mems["p5"].mem_type is MemType.EPISODIC
    for m in mems.values():  # every resolved date lies in the chat's year, not the clock's
        assert re.findall(r"\d{4}(?=[-年])", m.content) and all(
            y == "2023" for y in re.findall(r"\d{4}(?=[-年])", m.content)
        ), m.content

    # valid_at: when it was said (the message's ts, else its event's); created_at: now
    said = {"p0": SAID, "p2": SAID + 2 * minute, "p4": LATER, "p5": LATER}
    for key, m in mems.items():
        assert m.valid_at == said[key], (key, m.valid_at)
        assert m.created_at >= before - timedelta(seconds=5)

    # and recall hands back the speaker-named memory with its time
    resp = api.post(
        "/memory/v1/recall",
        json={"user_id": user_id, "query": "When did Priya start pottery?", "timeout_ms": 5000},
    ).json()
    assert resp["code"] == 0, resp
    top = resp["data"]["memories"][0]
    assert top["content"] == mems["p0"].content
    assert datetime.fromisoformat(top["valid_at"].replace("Z", "+00:00")) == SAID
    assert top["source"]["msg_id"] == "p0"
