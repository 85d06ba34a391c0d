"""``request_id`` belongs to its caller (docs/api.md#retrying-and-idempotent-writes-request_id),
through HTTP on the real stack.

Two app keys of one tenant (appA, appB) and an admin key, made the way
``memstream keys create`` does. The same request id from two apps gives two writes, each
stored for its own app under its own ids; from one key, the same request answers as the
first time and changes nothing, another request answers 40901 and changes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sinks import keystore
from tests.helpers.api_client import api_client
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "api_keys.json"

    def make(role="app", apps=()):
        return keystore.create(path, "default", role, list(apps), global_grant=False, now=NOW)[0]

    return path, {"A": make(apps=["appA"]), "B": make(apps=["appB"]), "admin": make("admin")}


@pytest.fixture(scope="module")
def call(settings, stores, runtime, ingest, keys):
    path, made = keys
    s = settings.model_copy(update={"api_keys_file": path})
    with api_client(s, stores, runtime, client=("127.0.0.1", 40000)) as http:

        def do(who: str, route: str, body: dict | None = None, method: str = "POST") -> dict:
            headers = {"Authorization": f"Bearer {made[who]}"}
            return http.request(method, f"/memory/v1/{route}", json=body, headers=headers).json()

        yield do


def _contents(call, user_id: int) -> dict[str, list[tuple[str, str, str]]]:
    """app → sorted (memory_id, content, status) of every memory of the user."""
    out = call("admin", "user/list", {"user_id": user_id, "include_deleted": True})
    assert out["code"] == 0, out
    return {
        app: sorted((m["memory_id"], m["content"], m["status"]) for m in items)
        for app, items in out["data"]["memories"]["APP"].items()
    }


def _done(call, who: str, task_id: str) -> dict:
    return wait_for(
        lambda: (
            (r := call(who, f"tasks/{task_id}", method="GET"))["code"] == 0
            and r["data"]["status"] in ("done", "failed")
            and r["data"]
        ),
        timeout=60,
        interval=0.2,
        what=f"task {task_id}",
    )


def test_one_request_id_from_two_apps_is_two_add_structured_writes(call, user_id):
    a = {"user_id": user_id, "app_id": "appA", "content": "I like green tea", "request_id": "rid-1"}
    first = call("A", "add_structured", a)
    assert first["code"] == 0 and first["data"]["duplicate"] is False, first
    b = {**a, "app_id": "appB", "content": "I drive a red truck"}
    second = call("B", "add_structured", b)
    assert second["code"] == 0 and second["data"]["duplicate"] is False, second
    assert second["data"]["memory_id"] != first["data"]["memory_id"]
    assert _contents(call, user_id) == {
        "appA": [(first["data"]["memory_id"], "I like green tea", "ACTIVE")],
        "appB": [(second["data"]["memory_id"], "I drive a red truck", "ACTIVE")],
    }
    ask = {"user_id": user_id, "query": "green tea", "scope": {"app_id": "appA"}}
    hits = call("A", "recall", ask)
    assert [m["content"] for m in hits["data"]["memories"]] == ["I like green tea"], hits


def test_one_request_id_from_two_apps_is_two_add_tasks(call, user_id):
    turn = [{"role": "user", "content": "I was born in Lisbon."}]
    a = {"user_id": user_id, "app_id": "appA", "messages": turn, "request_id": "rid-2"}
    first = call("A", "add", a)
    assert first["code"] == 0 and first["data"]["accepted"] is True, first
    other = [{"role": "user", "content": "I play the violin every evening."}]
    second = call("B", "add", {**a, "app_id": "appB", "messages": other})
    assert second["code"] == 0 and second["data"]["accepted"] is True, second
    task_a, task_b = first["data"]["task_id"], second["data"]["task_id"]
    assert task_a != task_b
    assert _done(call, "A", task_a)["counts"]["added"] == 1
    assert _done(call, "B", task_b)["counts"]["added"] == 1
    assert call("B", f"tasks/{task_a}", method="GET")["code"] == 40401
    stored = _contents(call, user_id)
    assert [c for _, c, _ in stored["appA"]] == ["User was born in Lisbon"], stored
    assert len(stored["appB"]) == 1 and "violin" in stored["appB"][0][1], stored


def test_a_resent_add_answers_the_same_task_and_another_body_40901(call, user_id):
    turn = [{"role": "user", "content": "My locker code is 4417."}]
    body = {"user_id": user_id, "app_id": "appA", "messages": turn, "request_id": "rid-3"}
    first = call("A", "add", body)
    assert first["code"] == 0, first
    done = _done(call, "A", first["data"]["task_id"])
    assert done["status"] == "done" and done["counts"]["added"] == 1, done
    before = _contents(call, user_id)
    again = call("A", "add", body)
    assert again["code"] == 0 and again["data"] == first["data"], again
    other = call("A", "add", {**body, "messages": [{"role": "user", "content": "I am 40."}]})
    assert other["code"] == 40901, other
    assert _done(call, "A", first["data"]["task_id"]) == done
    assert _contents(call, user_id) == before


def test_a_resent_write_answers_the_same_and_another_body_40901(call, user_id):
    body = {"user_id": user_id, "app_id": "appA", "content": "I like jazz", "request_id": "rid-4"}
    first = call("A", "add_structured", body)
    assert first["code"] == 0, first
    mid = first["data"]["memory_id"]
    assert call("A", "add_structured", body)["data"] == first["data"]
    conflict = call("A", "add_structured", {**body, "content": "I like opera"})
    assert conflict["code"] == 40901, conflict
    assert _contents(call, user_id) == {"appA": [(mid, "I like jazz", "ACTIVE")]}

    upd = {"user_id": user_id, "memory_id": mid, "content": "I like cool jazz", "request_id": "u1"}
    updated = call("A", "update", upd)
    assert updated["code"] == 0, updated
    changes = call("admin", "change_log", {"user_id": user_id})
    assert changes["code"] == 0, changes
    assert call("A", "update", upd)["data"] == updated["data"]
    assert call("A", "update", {**upd, "content": "I like bebop"})["code"] == 40901
    assert call("admin", "change_log", {"user_id": user_id})["data"] == changes["data"]
    assert _contents(call, user_id) == {"appA": [(mid, "I like cool jazz", "ACTIVE")]}

    kept = call("A", "add_structured", {**body, "content": "I like tango", "request_id": "rid-5"})
    dele = {"user_id": user_id, "memory_id": mid, "request_id": "d1"}
    deleted = call("A", "delete", dele)
    assert deleted["code"] == 0 and deleted["data"]["deleted"] == 1, deleted
    assert call("A", "delete", dele)["data"] == deleted["data"]
    other = call("A", "delete", {**dele, "memory_id": kept["data"]["memory_id"]})
    assert other["code"] == 40901, other
    statuses = {m: s for m, _, s in _contents(call, user_id)["appA"]}
    assert statuses == {mid: "DELETED", kept["data"]["memory_id"]: "ACTIVE"}
