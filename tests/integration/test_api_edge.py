"""Limits at the HTTP edge and truthful errors, against the real stores.

Every violation answers 40001 before anything is accepted; an unexpected error answers
the envelope with a trace id on a connection that stays open.
"""

from __future__ import annotations

import http.client
import json
import threading
import time

import pytest

from tests.helpers.nesting import nested

pytestmark = pytest.mark.integration

SECRET = "my locker code is 90210"


def _turns(n: int, size: int) -> list[dict]:
    return [{"role": "user", "content": SECRET + "x" * (size - len(SECRET))}] * n


# endpoint, body (user_id filled in), what the message names
REFUSED = {
    "user_id true (add)": ("add", {"user_id": True, "messages": _turns(1, 30)}, "user_id"),
    "user_id string (add_structured)": (
        "add_structured",
        {"user_id": "7", "content": "x"},
        "user_id",
    ),
    "user_id float (recall)": ("recall", {"user_id": 7.0, "query": "x"}, "user_id"),
    "user_id true (user/list)": ("user/list", {"user_id": True}, "user_id"),
    "user_id true (change_log)": ("change_log", {"user_id": True}, "user_id"),
    "tags 9 deep (add_structured)": (
        "add_structured",
        {"content": "x", "custom_tags": nested(9)},
        "deeper than 8",
    ),
    "tags 300 deep (add_structured)": (
        "add_structured",
        {"content": "x", "custom_tags": nested(300)},
        "custom_tags",
    ),
    "tags over 8 KiB (add_structured)": (
        "add_structured",
        {"content": "x", "custom_tags": {"a": "x" * 9000}},
        "8192 bytes",
    ),
    "tags 9 deep (update)": (
        "update",
        {"memory_id": "m_x", "custom_tags": nested(9)},
        "deeper than 8",
    ),
    "tags 9 deep (add strategy)": (
        "add",
        {"messages": _turns(1, 30), "strategy": {"tags": nested(9)}},
        "deeper than 8",
    ),
    "level APP without app_id (add)": (
        "add",
        {"level": "APP", "messages": _turns(1, 30)},
        "level APP needs an app_id",
    ),
    "add over max_event_bytes": ("add", {"messages": _turns(18, 60_000)}, "max_event_bytes"),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_violations_answer_40001_before_anything_is_accepted(api, runtime, user_id, case) -> None:
    path, body, named = REFUSED[case]
    body = {"user_id": user_id, **body} if "user_id" not in body else body
    resp = api.post(f"/memory/v1/{path}", json=body)
    out = resp.json()
    assert resp.status_code == 400 and out["code"] == 40001, out
    assert named in out["msg"], out["msg"]
    assert SECRET not in out["msg"]
    assert out["trace_id"]
    assert runtime.memories.load(user_id, tenant="default") == []


def test_a_body_over_the_limit_is_refused_before_it_is_parsed(api, settings, user_id) -> None:
    big = json.dumps({"user_id": user_id, "messages": _turns(50, 60_000)})
    assert len(big) > settings.max_event_bytes + 64 * 1024
    out = api.post(
        "/memory/v1/add", content=big, headers={"content-type": "application/json"}
    ).json()
    assert out["code"] == 40001 and "request body exceeds" in out["msg"], out


def test_change_log_far_in_the_past_or_future_is_an_empty_page(api, user_id) -> None:
    for start, end in [("0999-01-01T00:00:00Z", None), ("0001-01-01T00:00:00", "9999-12-31")]:
        body = {"user_id": user_id, "start": start, **({"end": end} if end else {})}
        out = api.post("/memory/v1/change_log", json=body).json()
        assert out["code"] == 0 and out["data"]["total"] == 0, out


def test_export_download_with_a_non_ascii_signature_is_refused(api) -> None:
    resp = api.get("/memory/v1/export/download/x1", params={"expires": 9_999_999_999, "sig": "é"})
    assert resp.status_code == 401 and resp.json()["code"] == 40101


def test_add_with_a_request_id_is_idempotent(api, runtime, ingest, user_id) -> None:
    body = {
        "user_id": user_id,
        "request_id": f"r-{user_id}",
        "messages": [{"role": "user", "content": "I work as a baker in Lyon."}],
    }
    first = api.post("/memory/v1/add", json=body).json()
    again = api.post("/memory/v1/add", json=body).json()
    assert first["code"] == 0 and again["code"] == 0, (first, again)
    assert first["data"]["task_id"] == again["data"]["task_id"]


# ---------------------------------------------------------------- unexpected errors
@pytest.fixture(scope="module")
def failing_server(settings, stores):
    """A real uvicorn server of the app with one route that fails unexpectedly."""
    import uvicorn

    from ops.procs import free_port
    from recall_api.app import create_app

    app = create_app(settings, stores)

    @app.get("/boom")
    def boom() -> dict:
        raise RuntimeError(f"bug while handling {SECRET}")

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield port
    server.should_exit = True
    thread.join(10)


def test_unexpected_error_answers_the_envelope_and_keeps_the_connection(
    failing_server, caplog
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", failing_server, timeout=10)
    for _ in range(2):  # the same connection serves the next request
        conn.request("GET", "/boom")
        resp = conn.getresponse()
        body = json.loads(resp.read())
        assert resp.status == 500
        assert body["code"] == 50000 and body["data"] is None, body
        assert body["trace_id"] and resp.getheader("x-trace-id") == body["trace_id"]
        assert SECRET not in json.dumps(body)
    conn.request("GET", "/healthz")
    assert conn.getresponse().status == 200
    conn.close()
    logged = [r for r in caplog.records if r.name == "recall_api.errors"]
    assert logged and all(SECRET not in r.getMessage() and not r.exc_info for r in logged)
    assert all(SECRET not in str(getattr(r, "fields", "")) for r in logged)
