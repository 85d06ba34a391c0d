"""Turns sent before a whole-user purge are not stored after it (issue 31, faults): a
turn still waiting in the session window when the purge is applied ends ``failed``
with the reason, nothing of it is readable, and turns sent after the purge are stored.
"""

from __future__ import annotations

import pytest

from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


def _task(api, task_id: str) -> dict:
    return wait_for(
        lambda: (
            (t := api.get(f"/memory/v1/tasks/{task_id}").json()["data"])
            and t["status"] in ("done", "failed")
            and t
        ),
        timeout=40,
        what=f"task {task_id} final",
    )


def _add(api, user_id: int, content: str) -> str:
    body = {"user_id": user_id, "messages": [{"role": "user", "content": content}]}
    got = api.post("/memory/v1/add", json=body).json()
    assert got["code"] == 0, got
    return got["data"]["task_id"]


def test_a_turn_waiting_in_the_window_when_the_user_is_purged_is_not_stored(
    api, runtime, ingest, user_id, monkeypatch
) -> None:
    # a window that waits 4 s for more turns: the purge is applied while the turn waits
    slow = runtime.settings.model_copy(update={"session_gap_s": 4.0})
    monkeypatch.setattr(runtime, "settings", slow)
    waiting = _add(api, user_id, "My bank PIN is hidden under the blue vase.")
    purge = api.post("/memory/v1/purge", json={"user_id": user_id}).json()
    assert purge["code"] == 0, purge

    task = _task(api, waiting)
    assert task["status"] == "failed" and "purged" in task["reason"], task
    listed = api.post("/memory/v1/user/list", json={"user_id": user_id}).json()["data"]
    assert listed["total"] == 0, listed
    found = api.post(
        "/memory/v1/recall", json={"user_id": user_id, "query": "bank PIN", "min_relevance": 0}
    ).json()["data"]
    assert found["memories"] == [], found

    # what the user says after the purge is stored as usual
    after = _task(api, _add(api, user_id, "I moved to Braga last spring."))
    assert after["status"] == "done" and after["counts"]["added"] >= 1, after
