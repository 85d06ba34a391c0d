"""Conversations in through real Kafka, memories out in ClickHouse + Milvus (rules provider)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from memstream.schemas.enums import Status
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


def _produce(bootstrap: str, events: list[dict]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 8 * 1024 * 1024})
    for e in events:
        value = e if isinstance(e, bytes) else json.dumps(e).encode()
        key = str(e.get("user_id", "x")).encode() if isinstance(e, dict) else b"x"
        producer.produce("memory.conversations", key=key, value=value)
    assert producer.flush(15) == 0


def _done(runtime, task_id: str):
    status = runtime.tasks.get(task_id, tenant="default")
    return status if status and status["status"] in ("done", "failed") else None


def _event(user_id: int, task_id: str, *texts: str, **extra) -> dict:
    msgs = [
        {"role": "user", "content": t, "msg_id": f"{task_id}-m{i}"} for i, t in enumerate(texts)
    ]
    return {"task_id": task_id, "user_id": user_id, "messages": msgs, **extra}


def test_kafka_conversations_become_memories_of_the_right_user(
    runtime, ingest, servers, user_id
) -> None:
    users = [user_id, user_id + 1, user_id + 2]
    events = [
        _event(users[0], f"k1-{user_id}", "I am a software engineer at Acme."),
        _event(users[1], f"k2-{user_id}", "My favourite food is sushi."),
        _event(users[2], f"k3-{user_id}", "I have two cats named Tom and Jerry.", app_id="chat"),
    ]
    _produce(servers.kafka_bootstrap, events)
    for e in events:
        status = wait_for(lambda e=e: _done(runtime, e["task_id"]), what=e["task_id"])
        assert status["status"] == "done", status
        assert status["counts"]["added"] >= 1
    many = runtime.tasks.get_many(
        [e["task_id"] for e in events] + ["t_never_seen"], tenant="default"
    )
    assert set(many) == {e["task_id"] for e in events}  # one round trip, unknown left out
    assert all(
        many[e["task_id"]] == runtime.tasks.get(e["task_id"], tenant="default") for e in events
    )

    mems = {u: runtime.memories.load(u, statuses=[Status.ACTIVE], tenant="default") for u in users}
    assert any("engineer" in m.content for m in mems[users[0]])
    assert any("sushi" in m.content for m in mems[users[1]])
    cat = [m for m in mems[users[2]] if "cats" in m.content]
    assert cat and cat[0].app_id == "chat" and cat[0].level == "APP"
    assert cat[0].source_msg_id == f"k3-{user_id}-m0"

    # the vector of user 1's fact is found only in user 1's partition
    vec = runtime.embedder.embed(["what is my job"])[0].tolist()
    for u in users:
        hits = runtime.stores.milvus.search(
            [vec], f'user_id == "{u}"', limit=10, output_fields=["user_id"]
        )[0]
        assert {h["entity"]["user_id"] for h in hits} <= {str(u)}
        assert {h["memory_id"] for h in hits} == {m.memory_id for m in mems[u]}


def test_same_fact_twice_is_one_memory(runtime, ingest, servers, user_id) -> None:
    fact = "I live in Lisbon."
    _produce(
        servers.kafka_bootstrap,
        [
            _event(user_id, f"d1-{user_id}", fact, "I live in  lisbon."),  # same batch, normalized
        ],
    )
    wait_for(lambda: _done(runtime, f"d1-{user_id}"), what="first task")
    _produce(servers.kafka_bootstrap, [_event(user_id, f"d2-{user_id}", fact)])  # later batch
    second = wait_for(lambda: _done(runtime, f"d2-{user_id}"), what="second task")
    assert second["counts"] == {
        "added": 0,
        "updated": 0,
        "superseded": 0,
        "skipped": 1,
        "evicted": 0,
    }
    live = [
        m for m in runtime.memories.load(user_id, tenant="default") if "lisbon" in m.content.lower()
    ]
    assert len(live) == 1

    none_rows = runtime.stores.clickhouse.query(
        "SELECT count() FROM memstream.memory_changelog WHERE user_id = {u:UInt64} "
        "AND op_type = 'NONE'",
        {"u": user_id},
    )
    assert none_rows[0][0] == 1  # the later telling is recorded as a NONE decision

    # a replay of the very same record (same task id) writes nothing, not even a NONE;
    # a marker event behind it on the same partition tells when it has gone through
    _produce(
        servers.kafka_bootstrap,
        [
            _event(user_id, f"d1-{user_id}", fact),
            _event(user_id, f"d3-{user_id}", "I own a red bicycle."),
        ],
    )
    wait_for(lambda: _done(runtime, f"d3-{user_id}"), what="marker task")
    assert (
        len(
            [
                m
                for m in runtime.memories.load(user_id, tenant="default")
                if "lisbon" in m.content.lower()
            ]
        )
        == 1
    )
    counts = dict(
        runtime.stores.clickhouse.query(
            "SELECT op_type, count() FROM memstream.memory_changelog FINAL "
            "WHERE user_id = {u:UInt64} AND NOT startsWith(memory_id, 'p_') GROUP BY op_type",
            {"u": user_id},
        )
    )
    assert counts == {"ADD": 2, "NONE": 1}  # Lisbon and the bicycle; the duplicate
    # the stored profile (docs/architecture.md#the-profile): written with Lisbon, then
    # with the bicycle; neither the duplicate nor the replay wrote a version of it
    profile = dict(
        runtime.stores.clickhouse.query(
            "SELECT op_type, count() FROM memstream.memory_changelog FINAL "
            "WHERE user_id = {u:UInt64} AND startsWith(memory_id, 'p_') GROUP BY op_type",
            {"u": user_id},
        )
    )
    assert profile == {"ADD": 1, "UPDATE": 1}


def test_http_add_reaches_done_with_counts(api, runtime, ingest, user_id) -> None:
    resp = api.post(
        "/memory/v1/add",
        json={
            "user_id": user_id,
            "app_id": "shop",
            "messages": [
                {"role": "user", "content": "Hi! I am allergic to peanuts.", "msg_id": "a1"},
                {"role": "assistant", "content": "Noted, I will remember that."},
            ],
        },
    )
    body = resp.json()
    assert resp.status_code == 200 and body["code"] == 0, body
    task_id = body["data"]["task_id"]
    assert body["data"]["accepted"] is True
    status = wait_for(
        lambda: (
            (s := api.get(f"/memory/v1/tasks/{task_id}").json()["data"])
            and s["status"] == "done"
            and s
        ),
        what="task done",
    )
    assert status["counts"]["added"] == 1
    mems = runtime.memories.load(user_id, tenant="default")
    assert [m.content for m in mems] == ["I am allergic to peanuts."] or any(
        "peanuts" in m.content for m in mems
    )
    assert all(m.app_id == "shop" for m in mems)


def test_http_add_validates(api, user_id) -> None:
    bad = [
        {"user_id": -1, "messages": [{"role": "user", "content": "x"}]},
        {"user_id": user_id, "messages": []},
        {"user_id": user_id, "messages": [{"role": "robot", "content": "x"}]},
        {"user_id": user_id, "level": "APP", "messages": [{"role": "user", "content": "x"}]},
        {"user_id": user_id, "messages": [{"role": "user", "content": "x" * 70000}]},
    ]
    for body in bad:
        resp = api.post("/memory/v1/add", json=body)
        assert resp.json()["code"] == 40001, (body, resp.json())
    assert api.get("/memory/v1/tasks/nope").json()["code"] == 40401
