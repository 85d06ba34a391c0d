"""`memstream bench all` at the tiny size (ingest only, to stay short: the other benches'
reports are checked by their own tests) writes one report with the summary table and
the ingest charts; `bench compare` reads it back; bad arguments stop before any stack
starts — the harness, never the numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.bench_report import assert_report_charts
from tests.helpers.stack_cli import cli, private_stack_env

pytestmark = pytest.mark.e2e


def test_a_tiny_run_writes_one_report_that_compare_reads_back(tmp_path: Path) -> None:
    env, _ = private_stack_env(tmp_path / "data")
    out = tmp_path / "out"
    done = cli(env, "bench", "all", "--size", "tiny", "--only", "ingest", "--out", str(out),
               timeout=280)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    printed = json.loads(done.stdout)
    (path,) = out.glob("*/report.json")
    assert printed["benches"] == {"ingest": "ok"} and printed["json_path"] == str(path)
    assert printed["report_path"] == str(path.parent / "report.md")
    assert_report_charts(path.parent,
                         {"ingest-throughput.png", "ingest-freshness.png", "ingest-node.png"})  # fmt: skip
    doc = json.loads(path.read_text())
    assert doc["report"]["command"][:3] == ["memstream", "bench", "all"]
    ingest = doc["benches"]["ingest"]
    for key in ("conversations_per_s", "facts_per_s", "freshness_p50_ms", "freshness_p95_ms",
                "freshness_p99_ms", "freshness_max_ms", "node", "series"):  # fmt: skip
        assert key in ingest, key
    assert {"saturation", "freshness"} == set(ingest["node"])
    assert ingest["series"]["done_per_s"] and ingest["series"]["freshness_ms"]
    assert [row["bench"] for row in doc["summary"]] == ["ingest"]
    assert "| ingest |" in (path.parent / "report.md").read_text()

    same = cli(env, "bench", "compare", str(path), str(path), timeout=60)
    assert same.returncode == 0, same.stderr
    assert re.search(r"^ingest\.facts_per_s\s+\S+\s+\S+\s+1\.000$", same.stdout, re.M)
    assert re.search(r"^ingest\.node\.saturation\.rss_mb_max\s", same.stdout, re.M)
    assert "series" not in same.stdout  # the charts' raw material is no figure


def test_bad_arguments_are_usage_errors_before_anything_starts(tmp_path: Path) -> None:
    env, _ = private_stack_env(tmp_path / "data")
    missing = cli(env, "bench", "all", "--compare", str(tmp_path / "nope.json"),
                  "--out", str(tmp_path / "out"), timeout=60)  # fmt: skip
    assert (
        missing.returncode == 2 and "--compare" in missing.stderr and "nope.json" in missing.stderr
    )
    assert not (tmp_path / "data").exists() and not list((tmp_path / "out").iterdir())
    unknown = cli(env, "bench", "all", "--only", "recall,nope", timeout=60)
    assert unknown.returncode == 2 and "--only" in unknown.stderr
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    compared = cli(env, "bench", "compare", str(junk), str(junk), timeout=60)
    assert compared.returncode == 2 and "is not JSON" in compared.stderr
