"""A change said in so many words supersedes the old memory, with no LLM (rules).

"I drive a VW Golf now" then, weeks later, "Sold the VW Golf, we got a Toyota Prius
instead": the Golf memory becomes SUPERSEDED (invalid_at = when the change was said,
superseded_by = the new memory), recall of "what car … now" finds the Prius and not the
Golf, and ``as_of`` before the change still finds the Golf. Same in Chinese.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from confluent_kafka import Producer

from memstream.schemas.enums import Status
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

BEFORE = datetime(2023, 3, 1, 9, 0, tzinfo=UTC)
AFTER = datetime(2023, 4, 12, 9, 0, tzinfo=UTC)


def _event(task_id: str, user_id: int, name: str, text: str, ts: datetime, msg_id: str) -> dict:
    turn = {"role": "user", "name": name, "content": text, "msg_id": msg_id, "ts": ts.isoformat()}
    return {"task_id": task_id, "user_id": user_id, "app_id": "cars", "messages": [turn]}


def _send_and_wait(runtime, bootstrap: str, event: dict) -> dict:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(
        "memory.conversations", key=str(event["user_id"]).encode(), value=json.dumps(event)
    )
    assert producer.flush(15) == 0

    def done():
        status = runtime.tasks.get(event["task_id"], tenant="default")
        return status if status and status["status"] in ("done", "failed") else None

    status = wait_for(done, what=event["task_id"])
    assert status["status"] == "done", status
    return status


def _recall(api, user_id: int, query: str, **extra) -> list[dict]:
    body = {"user_id": user_id, "query": query, "scope": {"app_id": "cars"}, "timeout_ms": 5000}
    resp = api.post("/memory/v1/recall", json={**body, **extra}).json()
    assert resp["code"] == 0, resp
    return resp["data"]["memories"]


@pytest.mark.parametrize(
    ("name", "old", "new", "query", "old_word", "new_word"),
    [
        ("Hannah", "I drive a VW Golf now, love it",
         "Sold the VW Golf, we got a Toyota Prius instead", "What car does Hannah drive now?",
         "VW Golf", "Prius"),
        ("王芳", "我现在开理想L7，很喜欢", "把理想L7卖了，换了辆特斯拉Model 3", "王芳现在开什么车？",
         "理想L7", "特斯拉"),
    ],
)  # fmt: skip
def test_a_named_change_supersedes_the_old_memory(
    runtime, ingest, api, servers, user_id, name, old, new, query, old_word, new_word
) -> None:
    first = _event(f"sup-a-{user_id}", user_id, name, old, BEFORE, "c0")
    second = _event(f"sup-b-{user_id}", user_id, name, new, AFTER, "c1")
    _send_and_wait(runtime, servers.kafka_bootstrap, first)
    status = _send_and_wait(runtime, servers.kafka_bootstrap, second)
    assert status["counts"]["superseded"] == 1, status

    mems = {m.source_msg_id: m for m in runtime.memories.load(user_id, tenant="default")}
    assert mems["c0"].status is Status.SUPERSEDED and mems["c1"].status is Status.ACTIVE
    assert mems["c0"].superseded_by == mems["c1"].memory_id
    assert mems["c0"].invalid_at == AFTER  # true until the change was said

    now = _recall(api, user_id, query)
    assert now and new_word in now[0]["content"], now
    assert all(m["source"]["msg_id"] != "c0" for m in now)
    then = _recall(api, user_id, query, as_of="2023-03-15T00:00:00Z")
    assert any(old_word in m["content"] and m["source"]["msg_id"] == "c0" for m in then), then
