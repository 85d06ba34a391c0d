"""add_structured through HTTP → memory.commands → the keyed writer → durable → answer."""

from __future__ import annotations

import json

import pytest

from memstream.schemas.enums import Status

pytestmark = pytest.mark.integration


def test_add_structured_is_durable_when_it_answers(api, runtime, ingest, user_id) -> None:
    resp = api.post(
        "/memory/v1/add_structured",
        json={
            "user_id": user_id,
            "app_id": "agent-x",
            "ownership": "AGENT",
            "mem_type": "PROCEDURAL",
            "content": "Always greet the user in Portuguese",
            "is_important": True,
            "custom_tags": {"persona": True},
            "request_id": f"req-{user_id}",
        },
    )
    body = resp.json()
    assert body["code"] == 0, body
    memory_id = body["data"]["memory_id"]
    stored = runtime.memories.get(user_id, memory_id, tenant="default")  # durable at answer time
    assert stored is not None and stored.status is Status.ACTIVE
    assert stored.ownership == "AGENT" and stored.level == "APP" and stored.is_important
    assert stored.weight == pytest.approx(0.90)
    assert runtime.stores.milvus.get([memory_id], ["memory_id"])

    sent = json.loads(resp.request.content)
    again = api.post("/memory/v1/add_structured", json=sent).json()
    assert again["code"] == 0 and again["data"] == body["data"]  # idempotent: the same answer
    other = api.post("/memory/v1/add_structured", json={**sent, "is_important": False}).json()
    assert other["code"] == 40901, other  # the same id for another request: nothing changed
    assert len(runtime.memories.load(user_id, tenant="default")) == 1


def test_add_structured_validates_and_respects_the_switch(api, runtime, ingest, user_id) -> None:
    assert (
        api.post("/memory/v1/add_structured", json={"user_id": user_id, "content": ""}).json()[
            "code"
        ]
        == 40001
    )
    assert (
        api.post(
            "/memory/v1/add_structured", json={"user_id": user_id, "level": "APP", "content": "x"}
        ).json()["code"]
        == 40001
    )
    runtime.switches.set(user_id, None, False, tenant="default")
    off = api.post("/memory/v1/add_structured", json={"user_id": user_id, "content": "I ski"})
    assert off.json()["code"] == 40301
    add = api.post(
        "/memory/v1/add",
        json={"user_id": user_id, "messages": [{"role": "user", "content": "I ski"}]},
    )
    assert add.json()["code"] == 40301
    runtime.switches.set(user_id, None, True, tenant="default")
    assert (
        api.post("/memory/v1/add_structured", json={"user_id": user_id, "content": "I ski"}).json()[
            "code"
        ]
        == 0
    )
