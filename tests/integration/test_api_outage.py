"""Redis stopped under the running API: writes answer 50301 with a request_id, never a 500,
and resending that request_id once Redis is back gives exactly one memory."""

from __future__ import annotations

import pytest

from ops import stack
from recall_api.routes.add import add_task_id
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def redis_down(servers):
    """Redis stopped for the test's first part; ``back()`` starts it again (data kept:
    append-only file), and the fixture makes sure it runs."""
    stack.stop(servers.data_dir, ("redis",))

    def back() -> None:
        stack.start_redis(servers.data_dir, servers.redis_url)

    yield back
    back()  # no-op when already running


def test_writes_during_a_redis_outage_answer_50301_and_retry_once(
    api, runtime, ingest, user_id, redis_down
) -> None:
    structured = {"user_id": user_id, "content": "My passport expires in May 2031"}
    turns = {"user_id": user_id, "messages": [{"role": "user", "content": "I am a pilot."}]}

    down = {}
    for path, body in (("add_structured", structured), ("add", turns)):
        resp = api.post(f"/memory/v1/{path}", json=body)
        out = resp.json()
        assert resp.status_code == 503 and out["code"] == 50301, (path, out)
        assert out["trace_id"] and resp.headers["retry-after"]
        assert out["data"]["request_id"] in out["msg"]
        down[path] = out["data"]["request_id"]

    status = api.get("/memory/v1/tasks/t_any").json()  # not "unknown task": unreadable now
    assert status["code"] == 50301, status

    redis_down()  # Redis is back

    def resend():
        out = api.post(
            "/memory/v1/add_structured", json={**structured, "request_id": down["add_structured"]}
        ).json()
        return out if out["code"] == 0 else None

    out = wait_for(resend, timeout=60, interval=1, what="add_structured once Redis is back")
    memory_id = out["data"]["memory_id"]
    wait_for(lambda: runtime.memories.get(user_id, memory_id, tenant="default"), what="the memory")
    contents = [r.content for r in runtime.memories.load(user_id, tenant="default")]
    assert contents.count(structured["content"]) == 1, contents  # the first try and its retry

    again = api.post("/memory/v1/add", json={**turns, "request_id": down["add"]}).json()
    assert again["code"] == 0, again
    assert again["data"]["task_id"] == add_task_id(user_id, down["add"], tenant="default")
    done = wait_for(
        lambda: (
            (s := runtime.tasks.get(again["data"]["task_id"], tenant="default"))
            and s["status"] == "done"
            and s
        ),
        timeout=60,
        what="the resent add",
    )
    assert done["counts"]["added"] == 1
