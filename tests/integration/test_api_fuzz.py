"""Schemathesis against ``/openapi.json`` (every operation, the admin ones included) on the
real stores and a running ingest: no generated request — valid or not — gets a 5xx, and
every refusal or error is the envelope with a trace id.

Valid and invalid requests (schemathesis' positive and negative modes). Bounded: a few
examples per operation and mode, no deadline, so the run stays well under 2 minutes.
The one 5xx allowed is the designed 50401 of a recall given its own ``timeout_ms``.
"""

from __future__ import annotations

import itertools
import os
from datetime import datetime

import hypothesis
import hypothesis.errors
import pytest
import schemathesis

pytestmark = pytest.mark.integration

# override for a longer hunt: FUZZ_EXAMPLES=200 pytest tests/integration/test_api_fuzz.py
EXAMPLES_PER_OPERATION = int(os.environ.get("FUZZ_EXAMPLES", "10"))


@pytest.fixture(scope="module")
def fuzz_schema(api, runtime, ingest, stores):
    from dataflows.lifecycle.schedule import LifecyclePasses
    from dataflows.lifecycle.submit import KafkaVia
    from recall_api.app import create_app

    passes = LifecyclePasses(runtime, KafkaVia(stores))

    def lifecycle_runner(now: datetime, users: list[int] | None) -> dict:
        # A real pass, but never over every user: other tests' memories share the store.
        return passes.run(now=now, users=(users or [])[:20])

    app = create_app(runtime.settings, stores, api.app.state.services)
    app.state.lifecycle_runner = lifecycle_runner
    return schemathesis.openapi.from_asgi("/openapi.json", app)


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
