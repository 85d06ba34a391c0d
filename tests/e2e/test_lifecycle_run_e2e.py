"""`memstream lifecycle run --now …` against a running node: the pass runs in the node."""

from __future__ import annotations

import json
import random
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers.stack_cli import cli as _cli
from tests.helpers.stack_cli import private_stack_env

pytestmark = pytest.mark.e2e


@pytest.fixture
def node_env(tmp_path: Path):
    env, ports = private_stack_env(tmp_path / "data")
    up = _cli(env, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    yield env, ports["api"]
    _cli(env, "down")


def _post(port: int, path: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def _run(env: dict[str, str], now: datetime, *extra: str) -> dict:
    done = _cli(env, "lifecycle", "run", "--now", now.isoformat(), *extra)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no node answers" not in done.stderr  # it ran inside the node
    return json.loads(done.stdout)


def test_lifecycle_run_with_an_explicit_clock_in_the_node(node_env) -> None:
    env, port = node_env
    user = random.getrandbits(40)
    added = _post(port, "/memory/v1/add_structured", {"user_id": user, "content": "I like tea"})
    assert added["code"] == 0, added
    start = datetime.now(UTC)

    assert _run(env, start + timedelta(days=89), "--user", str(user))["archived"] == 0
    summary = _run(env, start + timedelta(days=91))  # the whole store, as an operator would
    assert summary["archived"] == 1 and summary["failed_commands"] == 0
    assert _run(env, start + timedelta(days=91))["archived"] == 0  # nothing left to do
