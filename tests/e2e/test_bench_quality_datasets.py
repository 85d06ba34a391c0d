"""`memstream bench quality --dataset realmem|madial-zh` on tiny files in the published
formats writes a valid JSON with the budget figures for memstream and the three raw-text
baselines (issue 32) — the harness, never the numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.bench.quality.budget import KEYS
from tests.helpers.quality_fixtures import write_madial, write_realmem
from tests.helpers.stack_cli import cli, private_stack_env

pytestmark = pytest.mark.e2e

SYSTEMS = ("bm25", "dense", "hybrid")


def _run(tmp_path: Path, dataset: str, root: Path, *extra: str) -> dict:
    env, _ = private_stack_env(tmp_path / "data")
    out = tmp_path / "out"
    done = cli(env, "bench", "quality", "--dataset", dataset, "--datasets-dir", str(root),
               "--out", str(out), *extra, timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    printed = json.loads(done.stdout)
    (path,) = out.glob("*/report.json")
    assert printed["json_path"] == str(path) and "questions" not in printed
    result = json.loads(path.read_text(encoding="utf-8"))["benches"]["quality"]
    assert "@500" in done.stderr and "top10ch" in done.stderr  # the budget table
    ms, base = result["memstream"], result["baselines"]
    assert set(SYSTEMS) <= set(base) and ms["failed_recalls"] == {}
    for system in (ms, *(base[s] for s in SYSTEMS)):
        assert set(KEYS) <= set(system["overall"]), system["overall"]
        for key in KEYS[:-1]:
            assert 0.0 <= system["overall"][key] <= 1.0
        assert system["overall"]["top10_chars"] > 0
        assert system["overall"]["chars@500"] <= system["overall"]["chars@4000"]
    config = result["config"]
    assert config["dataset"] == dataset and config["depth"] == 50
    assert config["budgets"] == [500, 1000, 2000, 4000]
    assert set(result["paired"]) == set(SYSTEMS)
    start = result["session_start"]  # issue 44: what a session could start with
    assert start["budgets"] == [1000, 2000, 4000] and start["failed"] == {}
    assert start["profile"] == "served"  # POST /memory/v1/profile answers
    for name in ("recent", "by_weight", "profile"):
        overall = start["systems"][name]["overall"]
        assert overall["n"] == len(result["questions"])
        assert 0.0 <= overall["start@1000"] <= overall["start@4000"] <= 1.0
    assert "session start" in done.stderr and "\nprofile " in done.stderr
    return result


def test_realmem_replays_sessions_and_asks_after_the_ones_before(tmp_path: Path) -> None:
    result = _run(tmp_path, "realmem", write_realmem(tmp_path / "sets"))
    config, ingest = result["config"], result["ingest"]
    assert config["questions"] == {"dynamic incremental": 1, "implicit preference": 1}
    assert ingest["tasks"] == 2 and ingest["missing_tasks"] == 0  # session 3 never needed
    by_type = result["memstream"]["by_type"]
    assert set(by_type) == {"dynamic incremental", "implicit preference"}
    assert len(result["questions"]) == 2


def test_madial_writes_the_memories_and_asks_the_dialogues(tmp_path: Path) -> None:
    result = _run(tmp_path, "madial-zh", write_madial(tmp_path / "sets", "zh"), "--capacity",
                  "lifted")  # fmt: skip
    assert result["config"]["capacity"] == "lifted"
    assert result["ingest"]["add_structured_codes"] == {"0": 3}
    assert result["config"]["questions"] == {"dialogue": 2}
    # three memories, a few characters each: every system's top 10 is all of them
    assert result["baselines"]["bm25"]["overall"]["top10_chars"] <= 3 * 40


def test_absent_datasets_are_a_clear_error(tmp_path: Path) -> None:
    env, _ = private_stack_env(tmp_path / "data")
    done = cli(env, "bench", "quality", "--dataset", "madial-en", "--datasets-dir",
               str(tmp_path / "nowhere"), timeout=60)  # fmt: skip
    assert done.returncode == 2 and "--datasets-dir" in done.stderr and not done.stdout
