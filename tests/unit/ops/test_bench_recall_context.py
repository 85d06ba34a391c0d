"""The recall bench's context phase as the report and the verdict read it: a row and a
table line beside each recall phase, with its p99 over recall's; a context call that did
not answer 0 fails the bench as a recall would."""

from __future__ import annotations

from pathlib import Path

from ops.bench.sections import section
from ops.bench.suite import passed


def _phase(context_codes: dict[str, int]) -> dict:
    return {
        "mode": "fixed 50.0/s", "offered_per_s": 50.0, "recalls_per_s": 49.8, "p50_ms": 4.0,
        "p95_ms": 8.0, "p99_ms": 10.0, "max_ms": 12.0, "timeouts": 0, "codes": {"0": 1000},
        "hot_cache": {"hit_ratio": 0.9}, "node": {"cpu_cores_mean": 0.5, "rss_mb_max": 400},
        "context": {"requests": 990, "per_s": 49.5, "p50_ms": 7.0, "p95_ms": 14.0,
                    "p99_ms": 18.0, "max_ms": 25.0, "codes": context_codes, "timeouts": 0,
                    "hot_cache_hit_ratio": 0.88, "p99_over_recall": 1.8},
    }  # fmt: skip


def _result(context_codes: dict[str, int]) -> dict:
    return {"users": 10, "memories_per_user": 5, "hot_cache_budget_mb": 64, "fit_cache": False,
            "traffic": {"zipf": None, "session_len": 1}, "embedder": "e5", "context": True,
            "phases": [_phase(context_codes)]}  # fmt: skip


def test_the_report_shows_the_context_call_beside_its_recall_phase(tmp_path: Path) -> None:
    rows, lines = section("recall", _result({"0": 990}), tmp_path)
    assert [r["bench"] for r in rows] == ["recall fixed 50.0/s", "context fixed 50.0/s"]
    assert rows[1]["throughput"] == "49.5 calls/s" and "1.8x recall's" in rows[1]["notes"]
    (line,) = [ln for ln in lines if ln.startswith("| context, fixed 50.0/s |")]
    assert "7.0 / 14.0 / 18.0 / 25.0" in line


def test_a_context_call_that_failed_fails_the_bench() -> None:
    assert passed("recall", _result({"0": 990}))
    assert not passed("recall", _result({"0": 980, "50401": 10}))
