"""The API declares its answers: every operation in OpenAPI names the model of its 200
answer, and every real answer is exactly what its route's declared model renders: it
validates (no required field missing), it names no field the model does not (one would be
undocumented, and dropped by a client that parses through ``memstream.schemas.responses``), and
each value re-renders unchanged (a type the model declares wrongly shows here)."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel

from memstream.schemas.api import Envelope
from recall_api import health
from recall_api.app import create_app
from recall_api.routes import (
    add,
    admin,
    console,
    context,
    entities,
    entity_backfill,
    entity_update,
    items,
    manage,
    privacy,
    profile,
    recall,
    session,
    users,
)
from recall_api.state import api_state

pytestmark = pytest.mark.integration

REF = "#/components/schemas/"
ROUTERS = [
    m.router
    for m in (health, admin, add, recall, manage, privacy, session, console, entities, users)
    + (entity_update, entity_backfill, profile, context, items)
]


def drift(rendered: Any, raw: Any, where: str = "") -> list[str]:
    """Where ``raw`` (an answer) and ``rendered`` (the answer re-rendered through its
    declared model) differ: a field the model does not name (dropped), a required field
    missing (a validation error before this), a value the model would render otherwise."""
    if isinstance(raw, dict) and isinstance(rendered, dict):
        out = [f"{where}.{k} (not in the model)" for k in raw.keys() - rendered.keys()]
        out += [f"{where}.{k} (not in the answer)" for k in rendered.keys() - raw.keys()]
        for k in raw.keys() & rendered.keys():
            out += drift(rendered[k], raw[k], f"{where}.{k}")
        return out
    if isinstance(raw, list) and isinstance(rendered, list) and len(raw) == len(rendered):
        return [
            x
            for i, (p, r) in enumerate(zip(rendered, raw, strict=True))
            for x in drift(p, r, f"{where}[{i}]")
        ]
    same = rendered == raw and type(rendered) is type(raw)
    return [] if same else [f"{where}: {raw!r} renders as {rendered!r}"]


class Checked:
    """A client that validates every answer against its route's ``response_model``."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.routes = {
            (m, r.path): r
            for router in ROUTERS
            for r in router.routes
            if isinstance(r, APIRoute)
            for m in r.methods
        }
        self.seen: set[str] = set()

    def __call__(self, method: str, path: str, json: Any = None, **params: Any) -> dict:
        route = self.routes[(method, path)]
        response = self.client.request(method, path.format(**params), json=json)
        body = response.json()
        assert response.status_code == 200 and body.get("code", 0) == 0, (path, body)
        model = route.response_model
        assert isinstance(model, type) and issubclass(model, BaseModel), (path, model)
        parsed = model.model_validate(body)  # a required field missing fails here
        rendered = parsed.model_dump(mode="json", exclude_unset=True)
        assert not drift(rendered, body), (path, drift(rendered, body), body)
        if issubclass(model, Envelope):
            assert body["data"] is not None, (path, body)
        self.seen.add(f"{method} {path}")
        return body


def test_every_operation_declares_its_answer(api) -> None:
    spec = api.app.openapi()
    components = spec["components"]["schemas"]
    operations = [(m, p, op) for p, ops in spec["paths"].items() for m, op in ops.items()]
    assert len(operations) >= 23, [f"{m} {p}" for m, p, _ in operations]
    for method, path, op in operations:
        where = f"{method.upper()} {path}"
        content = op["responses"]["200"].get("content") or {}
        assert content, where
        for media_type, media in content.items():
            schema = media["schema"]
            if media_type != "application/json":  # /metrics' text, the export's JSONL
                assert schema == {"type": "string"}, where
                continue
            assert set(schema) == {"$ref"}, (where, schema)  # a named model, not {} or dict
            model = components[schema["$ref"].removeprefix(REF)]
            assert model.get("properties"), (where, model)
            if path.startswith(("/memory/", "/admin/", "/console/")):  # the envelope
                data = model["properties"]["data"]["anyOf"][0]
                assert set(data) == {"$ref"}, (where, data)
                assert components[data["$ref"].removeprefix(REF)].get("properties"), where


def test_real_answers_validate_against_their_declared_model(
    api, runtime, ingest, stores, user_id
) -> None:
    from dataflows.lifecycle.schedule import LifecyclePasses
    from dataflows.lifecycle.submit import KafkaVia

    app = create_app(runtime.settings, stores, api_state(api.app).services)
    passes = LifecyclePasses(runtime, KafkaVia(stores))
    # a real pass, over this test's user only (other tests' memories share the store)
    api_state(app).lifecycle_runner = lambda now, users, **scope: passes.run(
        now, [user_id], **scope
    )
    call = Checked(TestClient(app, client=("127.0.0.1", 40000)))  # loopback: admin too
    u = user_id

    turns = [{"role": "user", "content": "I moved to Lisbon last spring", "name": "Ana"}]
    added = call("POST", "/memory/v1/add", {"user_id": u, "messages": turns, "request_id": "r1"})
    call("GET", "/memory/v1/tasks/{task_id}", task_id=added["data"]["task_id"])
    structured = {
        "user_id": u,
        "app_id": "shop",
        "session_id": "s1",
        "level": "SESSION",
        "content": "My sister lives in Berlin",
        "custom_tags": {"topic": "family"},
        "expire_at": "2099-01-01T00:00:00Z",
    }
    mid = call("POST", "/memory/v1/add_structured", structured)["data"]["memory_id"]
    other = call("POST", "/memory/v1/add_structured", {"user_id": u, "content": "I like tea"})
    query = {"user_id": u, "query": "where does my sister live", "min_relevance": 0}
    query["scope"] = {"app_id": "shop", "session_id": "s1"}
    recalled = call("POST", "/memory/v1/recall", query)
    assert recalled["data"]["memories"], recalled
    call("POST", "/memory/v1/recall", {**query, "max_chars": 40})
    call(
        "POST",
        "/memory/v1/update",
        {"user_id": u, "memory_id": mid, "custom_tags": {"topic": "kin"}},
    )
    call("POST", "/memory/v1/history", {"user_id": u, "memory_id": mid})
    call("POST", "/memory/v1/change_log", {"user_id": u})
    listed = call("POST", "/memory/v1/user/list", {"user_id": u})
    assert listed["data"]["memories"]["SESSION"]["s1"], listed
    found = call("POST", "/memory/v1/entities", {"user_id": u})["data"]["entities"]
    assert "Berlin" in {e["name"] for e in found}, found
    call("POST", "/memory/v1/entity", {"user_id": u, "name": "berlin"})
    berlin = next(e["entity_id"] for e in found if e["name"] == "Berlin")
    rename = {"user_id": u, "op": "rename", "entity_id": berlin, "name": "Berlin, Germany"}
    call("POST", "/memory/v1/entity/update", rename)
    call("POST", "/admin/v1/entities/pending", {"user_id": u})
    call("POST", "/admin/v1/entities/backfill", {"user_id": u, "batch": 10})
    call("POST", "/memory/v1/profile", {"user_id": u, "scope": {"app_id": "shop"}})
    turn = [{"role": "user", "content": "where does my sister live"}]
    ctx = {"user_id": u, "scope": {"app_id": "shop"}, "messages": turn, "max_chars": 500}
    assert call("POST", "/memory/v1/context", ctx)["data"]["text"]
    item = {"user_id": u, "app_id": "shop", "namespace": ["notes"], "key": "k"}
    call("POST", "/memory/v1/items/put", {**item, "value": {"text": "likes tea", "n": None}})
    call("POST", "/memory/v1/items/get", item)
    search = {"user_id": u, "app_id": "shop", "query": "tea", "filter": {"n": None}}
    assert call("POST", "/memory/v1/items/search", search)["data"]["items"]
    call("POST", "/memory/v1/items/namespaces", {"user_id": u, "app_id": "shop"})
    call("POST", "/memory/v1/switch", {"user_id": u, "app_id": "shop", "enabled": True})
    call("POST", "/memory/v1/users/resolve", {"external_id": f"shapes-{u}"})
    export_id = call("POST", "/memory/v1/export", {"user_id": u})["data"]["export_id"]
    deadline = time.monotonic() + 30
    while True:  # running, then done with its signed link
        status = call("GET", "/memory/v1/export/{export_id}", export_id=export_id)["data"]
        if status["status"] != "running" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status["status"] == "done" and status["url"], status
    call("POST", "/memory/v1/session/close", {"user_id": u, "app_id": "shop", "session_id": "s1"})
    call("POST", "/memory/v1/delete", {"user_id": u, "memory_id": other["data"]["memory_id"]})
    call("POST", "/memory/v1/batch_delete", {"user_id": u, "memory_ids": [mid, "m_nope"]})
    call("GET", "/console/v1/whoami")
    call("GET", "/healthz")
    call("GET", "/readyz")
    call("GET", "/healthz/ingest")
    call("GET", "/admin/v1/stats")
    call("POST", "/admin/v1/sql", {"query": "SELECT 1 AS one, now() AS at"})
    summary = call("POST", "/admin/v1/lifecycle/run", {"now": datetime.now().isoformat()})
    assert summary["data"]["users"] >= 0
    purged = call("POST", "/memory/v1/purge", {"user_id": u})  # last: shreds the user's key
    assert purged["data"]["crypto_shredded"] is True, purged

    spec = app.openapi()["paths"]
    declared = {f"{m.upper()} {p}" for p, ops in spec.items() for m in ops}
    unseen = declared - call.seen - {"GET /metrics", "GET /memory/v1/export/download/{export_id}"}
    assert not unseen, unseen  # every JSON answer met once
