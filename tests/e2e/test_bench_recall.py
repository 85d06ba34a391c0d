"""`memstream bench recall` on a tiny workload with a tiny hot cache: the users outnumber
it, and the run reports the cold loads, the hot cache's hit ratio and the timeouts, the
context call's latency at the same rate after each phase, and writes a report with its
chart and the ratios to an earlier run — the harness, never the numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.bench_report import assert_report_charts
from tests.helpers.stack_cli import cli, private_stack_env

pytestmark = pytest.mark.e2e


def test_a_tiny_budget_reports_cold_loads_and_timeouts(tmp_path: Path) -> None:
    env, _ = private_stack_env(tmp_path / "data")
    env["MEMSTREAM_HOT_CACHE_BUDGET_MB"] = "1"  # 60 users x 40 memories: ~2.5 MB of hot data
    old = tmp_path / "old.json"  # an earlier run's figures, some of them (what --compare reads)
    old.write_text(json.dumps({"benches": {"recall": {"users": 30, "phases": [{"p99_ms": 1.0}],
                                                      "no_longer_reported": 5}}}))  # fmt: skip
    done = cli(env, "bench", "recall", "--users", "60", "--memories", "40", "--pool", "300",
               "--clients", "2", "--rate", "20", "--duration", "3", "--zipf", "1.1",
               "--session-len", "3", "--compare-fit", "--out", str(tmp_path / "out"),
               "--compare", str(old), timeout=300)  # fmt: skip
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-4000:]
    result = json.loads(done.stdout)
    assert "2 figures in common" in done.stderr  # users and the first phase's p99, new / old
    assert re.search(r"^recall\.users\s+30\s+60\s+2\.000$", done.stderr, re.M)
    assert re.search(r"^recall\.phases\.0\.p99_ms\s", done.stderr, re.M)
    (path,) = (tmp_path / "out").glob("*/report.json")
    report = json.loads(path.read_text())
    assert [r["figure"] for r in report["compare"]["rows"]] == ["recall.users",
                                                                "recall.phases.0.p99_ms"]  # fmt: skip
    assert_report_charts(path.parent, {"recall-latency.png"})
    for phase in result["phases"] + result["fit_phases"]:
        assert phase["offered_per_s"] == 20.0 and phase["node"]["rss_mb_max"] > 0
    assert result["hot_cache_budget_mb"] == 1 and result["fit_cache"] is False
    assert result["traffic"] == {"zipf": 1.1, "session_len": 3}
    (phase,) = result["phases"]
    hot = phase["hot_cache"]
    assert hot["cold_loads"] > 0 and 0 < hot["hit_ratio"] < 1  # sessions of 3 find it loaded
    assert hot["cold_load_ms"]["p50"] > 0 and hot["cold_load_max_ms"] >= hot["cold_load_ms"]["p99"]
    assert 0 < hot["users_held"] < 60  # the budget holds only some of them
    assert 0 < hot["from_snapshot"] <= hot["cold_loads"]  # the warm-up saved their snapshots
    assert phase["timeouts"] == phase["codes"].get("50401", 0)
    assert "timeouts" in done.stderr and "cold loads" in done.stderr
    # what Redis spent meanwhile: it served snapshots, so its own CPU moved
    assert phase["redis"]["cpu_s"] > 0 and phase["redis"]["forks"] >= 0
    assert phase["redis"]["children_cpu_s"] >= 0 and " forks (" in done.stderr
    (fit,) = result["fit_phases"]  # then the same stores with every user held
    assert result["fit_budget_mb"] > 1 and fit["hot_cache"]["users_held"] == 60
    assert fit["hot_cache"]["cold_loads"] == 0 and fit["hot_cache"]["hit_ratio"] == 1.0
    assert "fitted to every user" in done.stderr
    # the context call after each phase, same rate: its figures beside recall's
    assert result["context"] is True
    for phase in result["phases"] + result["fit_phases"]:
        ctx = phase["context"]
        assert ctx["requests"] > 0 and ctx["p99_ms"] >= ctx["p50_ms"] > 0, ctx
        assert ctx["codes"].get("0", 0) + ctx["timeouts"] == ctx["requests"], ctx
        assert ctx["p99_over_recall"] == round(ctx["p99_ms"] / phase["p99_ms"], 2)
    assert re.search(r"^\s+context, same rate: \d+ calls", done.stderr, re.M)
    assert "| context, fixed 20.0/s |" in (path.parent / "report.md").read_text()
