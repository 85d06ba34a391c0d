"""Turns sent before a scoped purge or a scoped batch_delete are not stored after it
(issue 42, part 3), through real Kafka: adds answered ``accepted`` and still waiting in
the session window when the delete is applied end ``failed`` (40401 and the reason) and
leave nothing; turns of another app sent before the delete, and turns of the scope sent
after it, are stored as usual."""

from __future__ import annotations

import random

import pytest

from dataflows.ingest.fence import SCOPE_REASON
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

# each with a word no other has: the extractor rewrites the sentence ("User's ...")
BEFORE = {
    "locker": "My locker code at the gym is 5521.",
    "gnome": "I keep my spare house key under a garden gnome.",
    "Miso": "My cat Miso only eats salmon pate.",
    "dentist": "I booked a dentist visit for the ninth of May.",
    "Augusta": "My favourite bakery is on Rua Augusta.",
}
OTHER_APP = {
    "jazz": "I play bass guitar in a jazz trio.",
    "Brompton": "My bicycle is a green Brompton.",
}
AFTER = {
    "Finnish": "I started learning Finnish in January.",
    "office": "My new office is on the fourth floor.",
}


def _task(api, task_id: str) -> dict:
    return wait_for(
        lambda: (
            (t := api.get(f"/memory/v1/tasks/{task_id}").json()["data"])
            and t["status"] in ("done", "failed")
            and t
        ),
        timeout=60,
        what=f"task {task_id} final",
    )


def _add(api, user_id: int, app_id: str, content: str) -> str:
    body = {
        "user_id": user_id,
        "app_id": app_id,
        "messages": [{"role": "user", "content": content}],
    }
    got = api.post("/memory/v1/add", json=body).json()
    assert got["code"] == 0 and got["data"]["accepted"] is True, got
    return got["data"]["task_id"]


def _listed(api, user_id: int) -> list[dict]:
    data = api.post("/memory/v1/user/list", json={"user_id": user_id, "page_size": 100}).json()
    grouped = data["data"]["memories"]
    return [
        *grouped["GLOBAL"],
        *(m for ms in grouped["APP"].values() for m in ms),
        *(m for ms in grouped["SESSION"].values() for m in ms),
    ]


@pytest.mark.parametrize("endpoint", ["purge", "batch_delete"])
def test_a_scoped_delete_fences_the_adds_of_its_scope_accepted_before_it(
    api, runtime, ingest, user_id, monkeypatch, endpoint
) -> None:
    # a window that waits 4 s for more turns: the delete is applied while the turns wait
    slow = runtime.settings.model_copy(update={"session_gap_s": 4.0})
    monkeypatch.setattr(runtime, "settings", slow)
    app_a, app_b = (f"{n}_{random.getrandbits(32):08x}" for n in ("app_a", "app_b"))
    waiting = [_add(api, user_id, app_a, text) for text in BEFORE.values()]
    other = [_add(api, user_id, app_b, text) for text in OTHER_APP.values()]

    done = api.post(
        f"/memory/v1/{endpoint}", json={"user_id": user_id, "scope": {"app_id": app_a}}
    ).json()
    assert done["code"] == 0 and done["data"]["deleted"] == 0, done  # nothing stored yet
    after = [_add(api, user_id, app_a, text) for text in AFTER.values()]

    for task_id in waiting:
        task = _task(api, task_id)
        assert task["status"] == "failed", task
        assert task["code"] == 40401 and task["reason"] == SCOPE_REASON, task
    for task_id in [*other, *after]:
        task = _task(api, task_id)
        assert task["status"] == "done" and task["counts"]["added"] >= 1, task

    by_app: dict[str, set[str]] = {}
    for m in _listed(api, user_id):
        words = {w for w in [*BEFORE, *OTHER_APP, *AFTER] if w in m["content"]}
        by_app.setdefault(m["app_id"], set()).update(words or {m["content"]})
    assert by_app == {app_a: set(AFTER), app_b: set(OTHER_APP)}, by_app
    query = {"user_id": user_id, "query": "locker code gym", "scope": {"app_id": app_a}}
    found = api.post("/memory/v1/recall", json={**query, "min_relevance": 0}).json()
    assert found["code"] == 0, found
    assert not any("locker" in m["content"] for m in found["data"]["memories"]), found
