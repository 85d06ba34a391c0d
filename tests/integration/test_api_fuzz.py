"""Schemathesis against ``/openapi.json`` (every operation, the admin ones included) on the
real stores and a running ingest: no generated request — valid or not — gets a 5xx, and
every refusal or error is the envelope with a trace id.

Valid and invalid requests (schemathesis' positive and negative modes). Bounded: a few
examples per operation and mode, no deadline, so the run stays well under 2 minutes.
The one 5xx allowed is the designed 50401 of a recall given its own ``timeout_ms``.
"""

from __future__ import annotations

import itertools
import json
import os
from datetime import datetime
from urllib.parse import quote, urlencode

import hypothesis
import hypothesis.errors
import pytest
import schemathesis

from recall_api.state import api_state

pytestmark = pytest.mark.integration

# override for a longer hunt: FUZZ_EXAMPLES=200 pytest tests/integration/test_api_fuzz.py
EXAMPLES_PER_OPERATION = int(os.environ.get("FUZZ_EXAMPLES", "10"))


@pytest.fixture(scope="module")
def fuzz_app(api, runtime, ingest, stores):
    from dataflows.lifecycle.schedule import LifecyclePasses
    from dataflows.lifecycle.submit import KafkaVia
    from recall_api.app import create_app

    passes = LifecyclePasses(runtime, KafkaVia(stores))

    def lifecycle_runner(now: datetime, users: list[int] | None) -> dict:
        # A real pass, but never over every user: other tests' memories share the store.
        return passes.run(now=now, users=(users or [])[:20])

    app = create_app(runtime.settings, stores, api_state(api.app).services)
    api_state(app).lifecycle_runner = lifecycle_runner
    return app


@pytest.fixture(scope="module")
def fuzz_schema(fuzz_app):
    return schemathesis.openapi.from_asgi("/openapi.json", fuzz_app)


def check(case) -> None:
    """One generated request: the envelope with a trace id, and no 5xx."""
    response = case.call()
    if "/export/download/" in case.path and response.status_code == 200:
        return  # a file, not the envelope (only with a valid signature: never generated)
    where = (case.method, case.path, case.path_parameters, case.query, case.body)
    if not case.path.startswith(("/memory/", "/admin/")):  # healthz, readyz, metrics
        assert response.status_code < 500, (where, response.text[:300])
        return
    body = response.json()
    assert {"code", "msg", "data"} <= set(body), (where, body)
    if body["code"] != 0:  # every refusal and error: the whole envelope, with a trace id
        assert set(body) == {"code", "msg", "trace_id", "data"}, (where, body)
        assert body["trace_id"], (where, body)
    if response.status_code >= 500:
        own_timeout = isinstance(case.body, dict) and "timeout_ms" in case.body
        assert body["code"] == 50401 and own_timeout, (where, body)


def test_no_generated_request_gets_a_server_error(fuzz_schema) -> None:
    operations = [result.ok() for result in fuzz_schema.get_all_operations()]
    labels = {op.label for op in operations}
    assert {"POST /memory/v1/add", "POST /admin/v1/sql", "GET /healthz"} <= labels, labels
    modes = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
    for operation, mode in itertools.product(operations, modes):

        @hypothesis.given(case=operation.as_strategy(mode))
        @hypothesis.settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize="FUZZ_EXAMPLES" not in os.environ,
            database=None,
            suppress_health_check=list(hypothesis.HealthCheck),
            phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        )
        def run(case) -> None:
            check(case)

        try:
            run()
        except hypothesis.errors.Unsatisfiable:
            assert mode is schemathesis.GenerationMode.NEGATIVE  # nothing to get wrong


# ---------------------------------------------------------------- the text rule
# Every string the OpenAPI document says an operation takes — path and query parameters,
# body fields at any depth, list items, keys of free-form objects — given a lone surrogate
# (the JSON escape \ud83d; in a URL its UTF-8 bytes), NUL, or a control character
# (docs/api.md#text). Enumerated from /openapi.json, so a new route is covered unasked.
BAD = {"surrogate": "\ud83d", "nul": "\x00", "esc": "\x1b", "newline": "\n"}
NOT_TEXT = ("surrogate", "nul")  # refused in every string: exactly 40001


def _resolve(doc: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _sample(doc: dict, schema: dict, depth: int = 0) -> object:
    """A plausible value of ``schema``: every property present, strings ``"x"``."""
    schema = _resolve(doc, schema)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if _resolve(doc, o).get("type") != "null"]
            return _sample(doc, options[0], depth) if options else None
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        if depth > 4:
            return {}
        out = {k: _sample(doc, v, depth + 1) for k, v in schema.get("properties", {}).items()}
        if not out and schema.get("additionalProperties", True) is not False:
            out = {"k": "x"}
        return out
    if kind == "array":
        return [_sample(doc, schema.get("items", {}), depth + 1)]
    if kind == "integer":
        return max(1, int(schema.get("minimum", 1)))
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return False
    if schema.get("format") == "date-time":
        return "2025-01-01T00:00:00Z"
    return "x"


def _variants(value: object, bad: str) -> list[object]:
    """``value`` once per string in it (a key or a value), that string made bad."""
    if isinstance(value, str):
        return [value + bad]
    out: list[object] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += [{**value, k: sub} for sub in _variants(v, bad)]
            out.append({(kk + bad if kk == k else kk): vv for kk, vv in value.items()})
    elif isinstance(value, list):
        out += [
            [*value[:i], sub, *value[i + 1 :]]
            for i, v in enumerate(value)
            for sub in _variants(v, bad)
        ]
    return out


def _requests(doc: dict, bad: str) -> list[tuple[str, str, str | None, str]]:
    """(method, url, JSON body, what was made bad) for every string of every operation."""
    out = []
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            params = op.get("parameters", [])
            path_ps = {p["name"]: "x" for p in params if p["in"] == "path"}
            query = {
                p["name"]: _sample(doc, p.get("schema", {})) for p in params if p["in"] == "query"
            }
            content = op.get("requestBody", {}).get("content", {}).get("application/json")
            body = _sample(doc, content["schema"]) if content else None

            def url(ps: dict, q: dict, path: str = path) -> str:
                # a surrogate travels in a URL as its UTF-8 bytes (%ED%A0%BD)
                filled = path.format(
                    **{k: quote(str(v).encode("utf-8", "surrogatepass")) for k, v in ps.items()}
                )
                return f"{filled}?{urlencode(q, encoding='utf-8', errors='surrogatepass')}"

            dump = json.dumps(body) if body is not None else None
            for name in path_ps:
                out.append((method, url({**path_ps, name: "x" + bad}, query), dump, f"path {name}"))
            for name, value in query.items():  # a number's text made bad too
                q = {**query, name: f"{value}{bad}"}
                out.append((method, url(path_ps, q), dump, f"query {name}"))
            for variant in _variants(body, bad) if body is not None else []:
                out.append((method, url(path_ps, query), json.dumps(variant), "body"))
    return out


@pytest.mark.parametrize("kind", BAD)
def test_bad_text_in_every_string_and_parameter_never_gets_a_server_error(fuzz_app, kind):
    from fastapi.testclient import TestClient

    doc = fuzz_app.openapi()
    client = TestClient(fuzz_app, raise_server_exceptions=False)
    sent = _requests(doc, BAD[kind])
    assert len(sent) > 100, len(sent)  # every route, every string
    for method, url, body, what in sent:
        headers = {"content-type": "application/json"}
        resp = client.request(method.upper(), url, content=body, headers=headers)
        where = (method, url, what, body and body[:300])
        assert resp.status_code < 500 or _own_timeout(resp, body), (where, resp.text[:300])
        if not url.startswith(("/memory/", "/admin/")):
            continue
        out = resp.json()
        if kind in NOT_TEXT:  # a URL's surrogate bytes arrive as U+FFFD: a valid unknown id
            allowed = (40001,) if what == "body" else (40001, 40101, 40401)
            assert out["code"] in allowed, (where, out)


def _own_timeout(resp, body: str | None) -> bool:
    return resp.json().get("code") == 50401 and body is not None and "timeout_ms" in body
