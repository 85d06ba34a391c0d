"""The TypeScript client (``clients/typescript``, docs/api.md#typescript-client) against
the real API: this test serves the API over the session's Kafka, Redis, chDB and Milvus
Lite with the ingest flow running, builds the package (``npm ci`` when its
``node_modules`` is not that of the committed lock, then ``tsc``) and runs ``npm test``,
node's own test runner, with the API's URL and keys in the environment. The node tests
(``clients/typescript/test/*.test.mjs``) assert the behaviour; this one asserts they all
ran and passed, none skipped."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from memstream.schemas import requests, responses
from memstream.schemas.events import Message, Strategy
from tests.helpers.api_server import make_key, running_api

pytestmark = pytest.mark.integration

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
LOCK_STAMP = "node_modules/.memstream-lock-sha1"  # the lock node_modules was installed from
NODE_MAJOR = 20


def _node() -> tuple[str, str]:
    """node and npm, at least node 20 (``make test`` installs them when missing)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.fail(
            "node >= 20 and npm are needed for the TypeScript client (make test installs them)"
        )
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    major = int(version.stdout.strip().lstrip("v").split(".")[0])
    assert major >= NODE_MAJOR, f"node {version.stdout.strip()}: the client needs >= {NODE_MAJOR}"
    return node, npm


def _install(npm: str) -> None:
    """``npm ci`` unless node_modules was installed from this very package-lock.json."""
    lock = hashlib.sha1((PACKAGE / "package-lock.json").read_bytes()).hexdigest()
    stamp = PACKAGE / LOCK_STAMP
    if stamp.is_file() and stamp.read_text().strip() == lock:
        return
    done = subprocess.run(
        [npm, "ci", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
    stamp.write_text(lock)


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> tuple[Path, str, str]:
    path = tmp_path_factory.mktemp("ts-client-keys") / "api_keys.json"
    return path, make_key(path, "app", ("appA",)), make_key(path, "admin")


@pytest.fixture(scope="module")
def api_url(settings, stores, runtime, ingest, keys):
    with running_api(
        settings.model_copy(update={"api_keys_file": keys[0]}), stores, runtime
    ) as url:
        yield url


@pytest.fixture(scope="module")
def limited_url(settings, stores, runtime, ingest, keys):
    """Another API on the same stores: one recall a second per (key, user)."""
    s = settings.model_copy(update={"api_keys_file": keys[0], "rate_limit_user_recall": "1/second"})
    with running_api(s, stores, runtime) as url:
        yield url


def test_npm_test_passes_against_the_real_api(api_url, limited_url, keys) -> None:
    _, npm = _node()
    _install(npm)
    env = {
        **os.environ,
        "MEMSTREAM_API_URL": api_url,
        "MEMSTREAM_API_KEY": keys[1],
        "MEMSTREAM_TEST_ADMIN_KEY": keys[2],
        "MEMSTREAM_TEST_LIMITED_URL": limited_url,
        "NO_COLOR": "1",
    }
    env.pop("NODE_OPTIONS", None)
    run = subprocess.run(
        [npm, "test"], cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=240
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, f"npm test failed:\n{out[-8000:]}"
    counts = {k: int(v) for k, v in re.findall(r"^\S* ?(pass|fail|skipped) (\d+)$", out, re.M)}
    assert counts.get("fail") == 0 and counts.get("skipped") == 0, out[-4000:]
    assert counts.get("pass", 0) >= 20, out[-4000:]  # json + retry + stack tests


def test_the_readme_example_is_the_type_checked_one() -> None:
    """README.md's TypeScript example is ``examples/readme.ts``, which ``npm test``
    type-checks against the built package."""
    readme = (PACKAGE.parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## TypeScript client", 1)[1]
    block = re.search(r"```ts\n(.*?)```", section, re.S)
    assert block, "README.md's TypeScript client section has no ts example"
    assert block.group(1) in (PACKAGE / "examples" / "readme.ts").read_text(encoding="utf-8")


INTERFACE = re.compile(r"^export interface (\w+)(?: extends (\w+))? \{\n(.*?)^\}", re.M | re.S)
FIELD = re.compile(r"^  (\w+)\??:", re.M)
# the TypeScript types of the wire's shapes and the server's models they are written from
MODELS = {
    **{name: getattr(responses, name) for name in dir(responses)},
    "Message": Message,
    "Strategy": Strategy,
    "Scope": requests.Scope,
}


def test_the_types_name_the_fields_of_the_servers_models() -> None:
    """Each interface of ``src/types.ts`` has exactly the fields of the model of its name
    (``memstream/schemas/responses.py``; ``Message``, ``Strategy``, ``Scope`` of the requests), so
    a field added to an answer reaches the TypeScript types too."""
    text = (PACKAGE / "src" / "types.ts").read_text(encoding="utf-8")
    declared = {m[1]: (m[2], set(FIELD.findall(m[3]))) for m in INTERFACE.finditer(text)}
    drift = {}
    for name, (base, fields) in declared.items():
        if name in ("Turn", "JsonObject"):  # any chat API's turn (the client filters); JSON
            continue
        assert name in MODELS, f"types.ts: interface {name} has no model in schemas"
        if base:
            fields |= declared[base][1]
        want = set(MODELS[name].model_fields)
        if fields != want:
            drift[name] = {"missing": sorted(want - fields), "unknown": sorted(fields - want)}
    assert not drift, f"clients/typescript/src/types.ts is not the server's models: {drift}"
    assert len(declared) >= 30
