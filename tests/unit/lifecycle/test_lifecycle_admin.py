"""POST /admin/v1/lifecycle/run: loopback only, calls the injected runner with the clock."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from core.settings import Settings
from recall_api.errors import install_error_handlers
from recall_api.routes import admin
from recall_api.state import ApiState, install
from sinks.stores import Stores

# a pass's summary (``memstream.schemas.responses.LifecycleSummary``), as the runner answers it
SUMMARY = {
    "now": "2026-07-01T00:00:00+00:00",
    "users": 1,
    "archived": 1,
    "expired": 0,
    "purged": 0,
    "purged_deleted": 0,
    "purged_archived": 0,
    "sanitized_changes": 0,
    "consolidated": 0,
    "consolidated_members": 0,
    "failed_commands": 0,
    "reconciled": {},
    "took_s": 0.01,
}


def _app(runner=None) -> FastAPI:
    app = FastAPI()
    settings = Settings(api_keys_file=Path("/nonexistent/memstream/api_keys.json"))
    state = install(app, ApiState.build(settings, Stores.from_settings(settings)))
    install_error_handlers(app)
    app.include_router(admin.router)
    if runner is not None:
        state.lifecycle_runner = runner
    return app


def test_a_loopback_caller_runs_a_pass_with_its_clock() -> None:
    calls = []

    def runner(now, users):
        calls.append((now, users))
        return SUMMARY

    client = TestClient(_app(runner), client=("127.0.0.1", 40000))
    body = client.post("/admin/v1/lifecycle/run", json={"now": "2026-07-01T00:00:00"}).json()
    assert body["code"] == 0 and body["data"] == SUMMARY
    assert calls == [(datetime(2026, 7, 1, tzinfo=UTC), None)]  # naive = UTC
    client.post("/admin/v1/lifecycle/run", json={"now": "2026-07-01T02:00:00+02:00", "users": [4]})
    assert calls[-1] == (datetime(2026, 7, 1, tzinfo=UTC), [4])
    client.post("/admin/v1/lifecycle/run", json={})
    assert abs((calls[-1][0] - datetime.now(UTC)).total_seconds()) < 60


def test_other_callers_are_refused() -> None:
    client = TestClient(_app(lambda now, users: {}), client=("10.1.2.3", 40000))
    resp = client.post("/admin/v1/lifecycle/run", json={})
    assert resp.status_code == 401 and resp.json()["code"] == 40101


def test_without_a_runner_the_endpoint_says_unavailable() -> None:
    client = TestClient(_app(), client=("127.0.0.1", 40000))
    resp = client.post("/admin/v1/lifecycle/run", json={})
    assert resp.json()["code"] == 50301


def test_bad_bodies_are_40001() -> None:
    client = TestClient(_app(lambda now, users: {}), client=("127.0.0.1", 40000))
    assert client.post("/admin/v1/lifecycle/run", json={"now": "soon"}).json()["code"] == 40001
    assert client.post("/admin/v1/lifecycle/run", json={"users": [-1]}).json()["code"] == 40001
