"""`memstream bench ingest --dataset realmem` on tiny files in the published format
writes a valid JSON with the rates, the step shares and the embedder's own rate
(issue 33) — the harness, never the numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.quality_fixtures import write_realmem
from tests.helpers.stack_cli import cli, private_stack_env

pytestmark = pytest.mark.e2e


def test_realmem_ingest_reports_rates_steps_and_the_embedder_bound(tmp_path: Path) -> None:
    root = write_realmem(tmp_path / "sets")
    env, _ = private_stack_env(tmp_path / "data")
    out = tmp_path / "out"
    done = cli(env, "bench", "ingest", "--dataset", "realmem", "--datasets-dir", str(root),
               "--out", str(out), timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    (path,) = out.glob("*/report.json")
    r = json.loads(path.read_text(encoding="utf-8"))["benches"]["ingest"]
    assert r["dataset"] == "realmem" and r["failed_tasks"] == 0 and r["missing_tasks"] == 0
    sessions = sum(len(p["dialogues"]) for p in _personas(root))
    assert r["tasks"] == sessions and r["turns"] > 0 and r["turns_per_s"] > 0
    assert r["memories_written"] > 0 and r["memories_per_turn"] > 0
    shares = r["stages"]["share_of_steps"]
    assert {"extract", "embed_model", "write", "sink_clickhouse"} <= set(shares), shares
    assert abs(sum(shares.values()) - 1.0) < 0.01
    assert r["embedder_batch"]["texts"] > 0 and r["embedder_batch"]["per_s"] > 0
    assert "turns/s" in done.stderr and "embedder alone" in done.stderr
    report = (path.parent / "report.md").read_text(encoding="utf-8")
    assert "| step | seconds | share |" in report


def test_an_unknown_dataset_folder_is_a_clear_error(tmp_path: Path) -> None:
    env, _ = private_stack_env(tmp_path / "data")
    done = cli(env, "bench", "ingest", "--dataset", "realmem", "--datasets-dir",
               str(tmp_path / "nowhere"), "--out", str(tmp_path / "out"), timeout=60)  # fmt: skip
    assert done.returncode == 2 and "realmem" in done.stderr, done.stderr[-2000:]


def _personas(root: Path) -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((root / "realmem" / "dataset").glob("*.json"))]  # fmt: skip
