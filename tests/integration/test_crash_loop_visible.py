"""A crash-looping ingest flow is visible (docs/operations.md#crash-loops): the metric,
``GET /healthz/ingest`` (503), ``add`` (50301, nothing accepted) — while recall and
``/readyz`` keep serving. Restarts are noted the way the runner notes them
(``RestartLog`` on the session's Redis)."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from recall_api.state import api_state
from sinks.flow_health import LoopWatch, RestartLog, restarts_key

pytestmark = pytest.mark.integration


def fresh_watch(api) -> None:
    """A new crash-loop watch: the app's keeps its last answer for a second."""
    state = api_state(api.app)
    state.ingest_watch = LoopWatch(lambda: state.stores.redis.client)


@pytest.fixture
def looping(api, stores):
    client = stores.redis.client
    client.delete(restarts_key("ingest"))
    fresh_watch(api)  # no cached answer from an earlier test
    yield RestartLog("ingest", client)
    client.delete(restarts_key("ingest"))
    fresh_watch(api)


def _add(api, user_id: int):
    return api.post(
        "/memory/v1/add",
        json={"user_id": user_id, "messages": [{"role": "user", "content": "I like figs."}]},
    )


def test_three_restarts_in_five_minutes_show_as_a_crash_loop(api, looping, user_id) -> None:
    looping.restarted()
    looping.restarted()
    fresh_watch(api)
    health = api.get("/healthz/ingest")
    assert health.status_code == 200
    assert health.json()["checks"]["restarts"] == 2
    assert _add(api, user_id).json()["code"] == 0  # two restarts are no loop yet

    looping.restarted()
    assert looping.looping()
    value = REGISTRY.get_sample_value("memstream_flow_crash_looping", {"flow": "ingest"})
    assert value == 1.0
    fresh_watch(api)
    health = api.get("/healthz/ingest")
    assert health.status_code == 503
    assert health.json()["status"] == "crash_looping"

    refused = _add(api, user_id + 1)
    assert refused.status_code == 503
    body = refused.json()
    assert body["code"] == 50301 and "crash-looping" in body["msg"]
    assert "request_id" not in (body.get("data") or {})  # nothing was accepted

    assert api.get("/readyz").status_code == 200  # the API itself is ready
    recall = api.post("/memory/v1/recall", json={"user_id": user_id, "query": "figs"})
    assert recall.json()["code"] == 0


def test_restarts_older_than_the_window_do_not_count(api, looping, stores) -> None:
    import time

    client = stores.redis.client
    old = time.time() - 400
    client.zadd(restarts_key("ingest"), {f"{old + i}": old + i for i in range(5)})
    health = api.get("/healthz/ingest")
    assert health.status_code == 200 and health.json()["checks"]["restarts"] == 0
