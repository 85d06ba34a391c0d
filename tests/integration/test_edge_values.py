"""Issue 31 through the real stack: a value the stores cannot hold unchanged is refused at
the edge (HTTP 40001, Kafka ``memory.dlq`` with the reason), and the poisoned user can
still be listed, recalled, exported and purged afterwards."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Producer

from tests.helpers.waiting import wait_for
from tests.integration.test_ingest_dlq import _dlq_messages

pytestmark = pytest.mark.integration

FAR = "9999-12-31T23:59:59-01:00"  # year 10000 in UTC
NEAR = "0001-01-01T00:00:00+01:00"  # year 0 in UTC
RANGE = "1900-01-01T00:00:00Z .. 2299-12-31T23:59:59Z"


def _said(**fields) -> dict:
    return {
        "messages": [{"role": "user", "content": "I started a pottery class yesterday", **fields}]
    }


# endpoint, body (user_id added; memory_id filled for update), raw JSON text or None, named
POISONS = {
    "B1 add ts year 10000": ("add", {"app_id": "p2", **_said(ts=FAR)}, RANGE),
    "B1 add ts year 0": ("add", {"app_id": "p2", **_said(ts=NEAR)}, RANGE),
    "B1 add event ts": ("add", {**_said(), "ts": FAR}, "ts"),
    "B2 expire_at year 10000": ("add_structured", {"content": "far", "expire_at": FAR}, RANGE),
    "B2 expire_at year 0": ("add_structured", {"content": "near", "expire_at": NEAR}, RANGE),
    "B2 update expire_at": ("update", {"expire_at": FAR}, RANGE),
    "B4 recall as_of year 10000": ("recall", {"query": "meta app", "as_of": FAR}, RANGE),
    "B4 recall as_of year 0": ("recall", {"query": "meta app", "as_of": NEAR}, RANGE),
    "tags NaN": ("add_structured", {"content": "x", "custom_tags": {"a": float("nan")}}, "NaN"),
    "tags -Infinity": (
        "add_structured",
        {"content": "x", "custom_tags": {"a": float("-inf")}},
        "Infinity",
    ),
    "tags 2**70": ("add_structured", {"content": "x", "custom_tags": {"a": 2**70}}, "64-bit"),
    "tags NaN (update)": ("update", {"custom_tags": {"n": float("nan")}}, "NaN"),
    "tags 2**70 (add strategy)": ("add", {**_said(), "strategy": {"tags": {"a": 2**70}}}, "64-bit"),
    "tag key with a newline": (
        "add_structured",
        {"content": "x", "custom_tags": {"a\nb": 1}},
        "key",
    ),
    "blank content (add)": ("add", {"messages": [{"role": "user", "content": "   \t  "}]}, "blank"),
    "blank content (add_structured)": ("add_structured", {"content": "   \t  "}, "blank"),
    "blank content (update)": ("update", {"content": " \n "}, "blank"),
    "is_important 'yes'": ("add_structured", {"content": "x", "is_important": "yes"}, "boolean"),
    "is_important 1 (update)": ("update", {"is_important": 1}, "boolean"),
    "recall record_hit 'false'": ("recall", {"query": "x", "record_hit": "false"}, "boolean"),
    "app_id with a newline (add)": ("add", {"app_id": "p2\n", **_said()}, "control characters"),
    "app_id with a newline (add_structured)": (
        "add_structured",
        {"content": "x", "app_id": "a\nb"},
        "control characters",
    ),
    "session_id with a tab (add)": (
        "add",
        {"app_id": "p2", "session_id": "s\t1", **_said()},
        "control characters",
    ),
    "empty session_id (add)": ("add", {"session_id": "", **_said()}, "session_id"),
}


def _good_memory(api, user_id: int) -> str:
    out = api.post(
        "/memory/v1/add_structured",
        json={"user_id": user_id, "content": "I keep my bike in the garage"},
    ).json()
    assert out["code"] == 0, out
    return out["data"]["memory_id"]


def _user_still_works(api, user_id: int, memory_id: str | None) -> None:
    """list, recall, export and purge of ``user_id`` all answer (no 500)."""
    body = {"user_id": user_id}
    listed = api.post("/memory/v1/user/list", json=body)
    assert listed.status_code == 200, listed.text
    ids = [m["memory_id"] for ms in listed.json()["data"]["memories"].values() for m in _flat(ms)]
    if memory_id is not None:
        assert memory_id in ids
    recalled = api.post("/memory/v1/recall", json={**body, "query": "where is my bike?"})
    assert recalled.status_code == 200, recalled.text
    if memory_id is not None:
        assert memory_id in [m["memory_id"] for m in recalled.json()["data"]["memories"]]
    export_id = api.post("/memory/v1/export", json=body).json()["data"]["export_id"]
    done = wait_for(
        lambda: (
            (d := api.get(f"/memory/v1/export/{export_id}").json()["data"])["status"] != "running"
            and d
        ),
        timeout=30,
        what="the export",
    )
    assert done["status"] == "done", done
    purged = api.post("/memory/v1/purge", json=body)
    assert purged.status_code == 200 and purged.json()["code"] == 0, purged.text
    after = api.post("/memory/v1/user/list", json=body).json()
    assert after["code"] == 0 and not any(_flat(ms) for ms in after["data"]["memories"].values())


def _flat(group) -> list[dict]:
    """user/list groups GLOBAL as a list and APP/SESSION as {id: [...]}."""
    if isinstance(group, dict):
        return [m for ms in group.values() for m in ms]
    return list(group)


@pytest.mark.parametrize("case", POISONS, ids=list(POISONS))
def test_a_poisoned_value_is_refused_and_the_user_keeps_working(
    api, runtime, ingest, user_id, case
) -> None:
    path, body, named = POISONS[case]
    memory_id = _good_memory(api, user_id)
    body = {"user_id": user_id, **body}
    if path == "update":
        body["memory_id"] = memory_id
    resp = api.post(
        f"/memory/v1/{path}",
        content=json.dumps(body),  # NaN and -Infinity as Python writes them
        headers={"content-type": "application/json"},
    )
    out = resp.json()
    assert resp.status_code == 400 and out["code"] == 40001, out
    assert named in out["msg"], out["msg"]
    stored = runtime.memories.load(user_id, tenant="default")
    assert [m.memory_id for m in stored] == [memory_id]  # nothing written, nothing changed
    assert stored[0].expire_at is None and stored[0].custom_tags == {}
    _user_still_works(api, user_id, memory_id)


def test_what_add_stores_recall_finds_with_the_same_app_id(api, ingest, user_id) -> None:
    app = "app with spaces, é and a\\backslash"
    out = api.post(
        "/memory/v1/add_structured",
        json={"user_id": user_id, "app_id": app, "content": "I keep my bike in the garage"},
    ).json()
    assert out["code"] == 0, out
    body = {"user_id": user_id, "query": "where is my bike?", "scope": {"app_id": app}}
    hits = api.post("/memory/v1/recall", json=body).json()
    assert hits["code"] == 0 and hits["data"]["hit"], hits


def test_bad_values_produced_to_kafka_reach_the_dlq_with_the_reason(
    runtime, ingest, servers, user_id
) -> None:
    marker = uuid.uuid4().hex

    def event(**fields) -> bytes:
        turn = {"role": "user", "content": "I started a pottery class yesterday"}
        turn.update(fields.pop("turn", {}))
        return json.dumps({"m": marker, "user_id": user_id, "messages": [turn], **fields}).encode()

    bad = {
        "turn ts year 10000": (event(turn={"ts": FAR}), RANGE),
        "turn ts year 0": (event(turn={"ts": NEAR}), RANGE),
        "event ts year 10000": (event(ts=FAR), RANGE),
        "blank content": (event(turn={"content": " \t "}), "blank"),
        "app_id with a newline": (event(app_id="p2\n"), "control characters"),
        "tags NaN": (
            event(strategy={"tags": {"a": float("nan")}}),
            "NaN",
        ),
    }
    producer = Producer({"bootstrap.servers": servers.kafka_bootstrap})
    key = str(user_id).encode()
    for value, _ in bad.values():
        producer.produce("memory.conversations", key=key, value=value)
    good_task = f"good-{marker}"
    good = {
        "task_id": good_task,
        "user_id": user_id,
        "messages": [
            {
                "role": "user",
                "content": "I work as a nurse in Porto.",
                "ts": "2025-03-01T10:00:00+02:00",
            }
        ],
    }
    producer.produce("memory.conversations", key=key, value=json.dumps(good).encode())
    assert producer.flush(20) == 0

    status = wait_for(
        lambda: (
            (s := runtime.tasks.get(good_task, tenant="default")) and s["status"] == "done" and s
        ),
        timeout=40,
        what="the good event after the bad ones (the flow kept going)",
    )
    assert status["counts"]["added"] >= 1

    found = _dlq_messages(servers.kafka_bootstrap, marker.encode(), expected=len(bad))
    by_value = {m.value(): dict(m.headers()) for m in found}
    for name, (value, reason) in bad.items():
        assert value in by_value, f"{name} missing from the DLQ"
        assert reason in by_value[value]["error"].decode(), (name, by_value[value]["error"])
