"""The client-only install (docs/operations.md#installing): ``pip install .`` in a new venv
is the Python client and ``memstream mcp``, one top-level package, well under 100 MB, none
of the service's stack, and it recalls from a running memstream. The service's commands
name the extra they need instead of an ImportError trace.

pip builds the wheel from this checkout and takes the client's four dependencies from the
package index (its cache after the first run), as an agent's ``pip install`` would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

from tests.helpers.api_server import make_key, running_api

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
# what an agent's environment must not get from the client
SERVICE = ("core", "models", "sinks", "dataflows", "recall_api", "ops", "schemas")
HEAVY = ("torch", "transformers", "bytewax", "chdb", "pymilvus", "milvus_lite", "confluent_kafka")
SIZE_LIMIT_MB = 100


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    # outside the checkout, so its folders are not importable by accident
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("client-only") / "venv"
    venv.create(root, with_pip=False)  # this session's pip installs into it (--python)
    pip = [sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"), "install"]
    done = _run([*pip, "-q", str(REPO)], cwd=root, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return root


def _site_packages(root: Path) -> Path:
    return next((root / "lib").glob("python3*/site-packages"))


def test_one_top_level_package_and_nothing_of_the_service(client_venv: Path) -> None:
    site = _site_packages(client_venv)
    record = next(site.glob("memstream-*.dist-info")) / "RECORD"
    tops = {line.split("/", 1)[0] for line in record.read_text().splitlines()}
    tops = {t.split(",", 1)[0] for t in tops}
    assert {t for t in tops if not t.endswith(".dist-info") and t != ".."} == {"memstream"}
    assert not list(site.glob("memstream_server*"))
    probe = textwrap.dedent(
        f"""
        import importlib.util, json, sys
        import memstream, memstream.mcp_server, memstream.cli
        print(json.dumps({{
            "found": [m for m in {SERVICE + HEAVY!r} if importlib.util.find_spec(m)],
            "loaded": sorted({{m.split(".")[0] for m in sys.modules}} & set({SERVICE + HEAVY!r})),
        }}))
        """
    )
    out = _run([str(client_venv / "bin" / "python"), "-c", probe], cwd=client_venv)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"found": [], "loaded": []}


def test_the_install_is_small(client_venv: Path) -> None:
    size = sum(p.stat().st_size for p in client_venv.rglob("*") if p.is_file())
    assert size < SIZE_LIMIT_MB * 1024 * 1024, f"{size / 2**20:.1f} MB"


def test_the_service_commands_name_their_extra_and_mcp_runs(client_venv: Path) -> None:
    cli = str(client_venv / "bin" / "memstream")
    for command in (["up"], ["bench", "recall"], ["sql", "SELECT 1"]):
        done = _run([cli, *command], cwd=client_venv)
        assert done.returncode == 2
        assert "[server]" in done.stderr and "pip install 'memstream[server]'" in done.stderr
        assert "Traceback" not in done.stderr
    helped = _run([cli, "--help"], cwd=client_venv)
    assert helped.returncode == 0 and "[server]" in helped.stdout
    mcp = _run([cli, "mcp", "--help"], cwd=client_venv)
    assert mcp.returncode == 0 and "--user-id" in mcp.stdout, mcp.stderr


def test_it_recalls_from_a_running_stack(
    client_venv: Path, settings, stores, runtime, ingest, tmp_path, user_id
) -> None:
    keys = tmp_path / "api_keys.json"
    key = make_key(keys, "app", ("agent",))
    script = textwrap.dedent(
        """
        import sys
        from memstream import Client

        url, key, user = sys.argv[1], sys.argv[2], int(sys.argv[3])
        with Client(url, api_key=key) as c:
            c.add_structured(user, "I keep bees on the roof of my flat", app_id="agent")
            found = c.recall(user, "what insects do I keep?", app_id="agent")
            print(found.memories[0].content)
        """
    )
    with running_api(settings.model_copy(update={"api_keys_file": keys}), stores, runtime) as url:
        done = _run(
            [str(client_venv / "bin" / "python"), "-c", script, url, key, str(user_id)],
            cwd=client_venv,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "I keep bees on the roof of my flat"
