"""`memstream bench quality` at a tiny size writes a complete JSON and a report with its
charts — the harness, never the numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.bench.quality.budget import KEYS
from ops.bench.quality.data import TYPES
from tests.helpers.bench_report import assert_report_charts
from tests.helpers.stack_cli import cli, private_stack_env

pytestmark = pytest.mark.e2e

SYSTEM = ("overall", "by_type", "by_lang", "recalled_chars_mean", "recall_ms")


def test_a_tiny_run_writes_every_section(tmp_path: Path) -> None:
    env, _ = private_stack_env(tmp_path / "data")
    out = tmp_path / "out"
    done = cli(env, "bench", "quality", "--users", "2", "--sessions", "2", "--capacity",
               "lifted", "--out", str(out), timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    printed = json.loads(done.stdout)
    (path,) = out.glob("*/report.json")  # --out DIR: DIR/<timestamp>/report.json
    assert printed["json_path"] == str(path)
    report = json.loads(path.read_text(encoding="utf-8"))
    assert set(report["benches"]) == {"quality"} and report["report"]["machine"]["packages"]
    result = report["benches"]["quality"]
    assert result["bench"] == "quality"
    assert_report_charts(path.parent, {"quality-by-type.png", "quality-node.png"})
    assert result["node"]["rss_mb_max"] > 0 and result["series"]["node"]

    config = result["config"]
    assert (config["users"], config["sessions"], config["lang"]) == (2, 2, "both")
    assert config["capacity"] == "lifted" and config["capacity_per_app"] > 200
    assert config["top_k"] == 10 and config["min_relevance"] == 0.0
    assert set(config["questions"]) == set(TYPES) and all(config["questions"].values())
    assert result["ingest"]["tasks"] == 4 and result["ingest"]["missing_tasks"] == 0

    ms = result["memstream"]
    assert config["fusion"] == "hybrid"
    modes = result["modes"]  # memstream's single-channel modes, asked over the same store
    assert set(modes) == {"memstream_dense", "memstream_lexical"}
    for system in (ms, *modes.values(), result["baselines"]["bm25"], result["baselines"]["dense"]):
        assert set(SYSTEM) <= set(system)
        assert set(system["by_type"]) == set(TYPES)
        assert set(system["by_lang"]) == {"en", "zh"}
        assert {"recall@1", "recall@5", "recall@10", "hit@10", "n"} <= set(system["overall"])
        assert {"latest@1", "stale_above"} <= set(system["by_type"]["changed"])
        assert set(system["by_type"]["deleted"]) == {"n", "leak"}
        assert set(system["recall_ms"]) == {"p50", "p99"}
    assert set(result["baselines"]) >= {"bm25", "dense", "hybrid"}
    for system in (ms, *(result["baselines"][b] for b in ("bm25", "dense", "hybrid"))):
        assert set(KEYS) <= set(system["overall"])  # what an agent pays for (issue 32)
    assert config["depth"] == 50 and config["budgets"] == [500, 1000, 2000, 4000]
    assert "top10ch" in done.stderr
    assert set(ms["turns_kept"]) == {"active", "any_status"}
    assert set(ms["deleted"]) == {"turns_with_memories", "memories"}
    assert ms["failed_recalls"] == {}
    assert set(ms["turns_kept"]["active"]) == {"content", "chit"}
    assert {"overall", "by_type", "min_relevance"} <= set(ms["at_default_min_relevance"])
    for name in ("bm25", "dense", "memstream_dense", "memstream_lexical"):
        assert set(result["ratios"][name]) == {"overall", "by_type", "by_lang"}
        assert "recall@10" in result["ratios"][name]["overall"]
        paired = result["paired"][name]  # per question, over the same questions
        asked_en = sum(paired["en"].values())
        assert (
            set(paired) == {"all", "en", "zh"} and asked_en == ms["by_lang"]["en"]["overall"]["n"]
        )
        assert sum(paired["all"].values()) == ms["overall"]["n"]

    asked = sum(config["questions"].values())
    assert len(result["questions"]) == asked and "questions" not in printed
    assert "memstream" in done.stderr and "overall" in done.stderr  # the table
    assert "per question vs" in done.stderr

    start = result["session_start"]  # issue 44: one session start per user, no question yet
    assert start["contexts"] == 2 and start["failed"] == {}
    assert start["profile"] == "served"  # POST /memory/v1/profile answers
    for name in ("recent", "by_weight", "profile"):
        system = start["systems"][name]
        assert system["overall"]["n"] == ms["overall"]["n"]  # every question but deleted
        assert set(system["by_type"]) == set(TYPES) - {"deleted"}
        assert 0.0 <= system["overall"]["start@1000"] <= system["overall"]["start@4000"] <= 1
    assert start["systems"]["by_weight"]["overall"]["start@4000"] > 0  # memories were listed
    assert start["systems"]["profile"]["overall"]["start@4000"] > 0  # it cites memories
    assert "session start" in done.stderr and "\nprofile " in done.stderr
