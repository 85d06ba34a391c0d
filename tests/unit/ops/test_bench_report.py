"""The pieces of a bench report that need no stack: figures and their ratios, rates over
time, the process sampler, the machine record, the charts as PNG files, and a report of
a bench that failed. The reports of real (tiny) runs: tests/e2e/test_bench_*.py."""

from __future__ import annotations

import argparse
import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ops.bench import charts as bench_charts
from ops.bench import compare as bench_compare
from ops.bench import report as bench_report
from ops.bench import suite as bench_all
from ops.bench.env import rate_series
from ops.bench.machine import machine_info
from ops.bench.sampler import ProcSampler

PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(path: Path) -> bool:
    data = path.read_bytes()
    return data.startswith(PNG) and data[12:16] == b"IHDR" and len(data) > 1000


# ------------------------------------------------------------------ figures and ratios
def test_figures_are_numbers_by_path_through_dicts_and_lists_of_dicts() -> None:
    doc = {
        "users": 20,
        "fit_cache": False,  # a bool is no figure
        "embedder": "e5",
        "phases": [{"p50_ms": 3.0, "mode": "saturation"}, {"p50_ms": 4.5}],
        "series": {"done_per_s": [[0, 1.0]]},  # the charts' raw material
        "node": {"samples": [{"rss_mb": 1.0}], "cpu_cores_mean": 0.5},
        "latencies": [1.0, 2.0],  # plain numbers: no figure
        "nan": float("nan"),
    }
    assert bench_compare.figures(doc) == {
        "users": 20.0,
        "phases.0.p50_ms": 3.0,
        "phases.1.p50_ms": 4.5,
        "node.cpu_cores_mean": 0.5,
    }


def test_compare_gives_new_over_old_for_the_shared_figures_only() -> None:
    new = {"benches": {"ingest": {"facts_per_s": 300.0, "freshness_p99_ms": 50.0, "x": 1}}}
    old = {"benches": {"ingest": {"facts_per_s": 200.0, "freshness_p99_ms": 0, "gone": 3}}}
    rows = bench_compare.compare(new, old)
    assert rows == [
        {"figure": "ingest.facts_per_s", "old": 200.0, "new": 300.0, "ratio": 1.5},
        {"figure": "ingest.freshness_p99_ms", "old": 0.0, "new": 50.0, "ratio": None},
    ]
    text = bench_compare.format_rows(rows, "old.json")
    assert "2 figures in common" in text and "1.500" in text
    assert re.search(r"ingest\.freshness_p99_ms\s+0\s+50\s+-", text)
    assert "no figure in common" in bench_compare.format_rows([], "old.json")


def test_a_bare_bench_json_reads_as_a_report_of_that_bench(tmp_path: Path) -> None:
    bare = tmp_path / "quality-20261201T191400Z.json"  # what bench quality wrote before reports
    bare.write_text(json.dumps({"bench": "quality", "ingest": {"turns_per_s": 9.0}}))
    assert bench_compare.load(bare) == {"benches": {"quality": json.loads(bare.read_text())}}
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"benches": {"soak": {"requests": 5}}}))
    assert bench_compare.load(report)["benches"] == {"soak": {"requests": 5}}


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"no": "bench"}'])
def test_what_is_no_bench_json_is_refused_by_name(tmp_path: Path, text: str) -> None:
    path = tmp_path / "old.json"
    path.write_text(text)
    with pytest.raises(bench_compare.CompareError, match="old.json"):
        bench_compare.load(path)
    with pytest.raises(bench_compare.CompareError, match="cannot read"):
        bench_compare.load(tmp_path / "missing.json")


def test_prepare_refuses_a_bad_compare_file_and_an_out_that_is_a_file(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(bench_report.ReportError, match="--out"):
        bench_report.prepare(argparse.Namespace(out=afile / "sub", compare=None))
    with pytest.raises(bench_report.ReportError, match="--compare"):
        bench_report.prepare(argparse.Namespace(out=None, compare=afile))
    assert bench_report.prepare(argparse.Namespace(out=tmp_path / "new", compare=None)) is None
    assert (tmp_path / "new").is_dir()


# ------------------------------------------------------------------ rates and samples
def test_rate_series_counts_events_per_window_including_empty_ones() -> None:
    times = [100.1, 100.2, 100.9, 103.5]
    assert rate_series(times, 100.0) == [[0.0, 3.0], [1.0, 0.0], [2.0, 0.0], [3.0, 1.0]]
    assert rate_series(times, 100.0, 2.0) == [[0.0, 1.5], [2.0, 0.5]]
    assert rate_series([], 0.0) == []


def test_the_sampler_reads_this_process_cpu_and_rss() -> None:
    with ProcSampler(interval_s=0.05) as sampler:
        end = time.process_time() + 0.2
        while time.process_time() < end:  # CPU time, so a busy machine only makes it longer
            pass
    summary = sampler.summary()
    assert len(sampler.samples) >= 2 and summary["cpu_s"] > 0
    assert summary["rss_mb_start"] > 0 and summary["rss_mb_max"] >= summary["rss_mb_end"] > 0
    assert set(sampler.samples[-1]) == {"t_s", "cpu_cores", "rss_mb"}
    assert summary["cpu_cores_max"] > 0


def test_the_machine_record_names_cpu_ram_python_packages_and_commit() -> None:
    m = machine_info()
    assert m["cpu_count"] >= 1 and m["cpu_model"] and m["ram_mb"] > 0 and m["python"]
    assert "matplotlib" in m["packages"] and "bytewax" in m["packages"]
    assert re.fullmatch(r"[0-9a-f]{40}", m["git"]["commit"]) and isinstance(m["git"]["dirty"], bool)


# ------------------------------------------------------------------ charts
def test_each_chart_is_a_png_and_nothing_to_plot_is_no_file(tmp_path: Path) -> None:
    phase = {"p50_ms": 5.0, "p95_ms": 9.0, "p99_ms": 12.0, "max_ms": 20.0}
    recall = {"phases": [{**phase, "offered_per_s": 10.0, "recalls_per_s": 10.1},
                         {**phase, "offered_per_s": None, "recalls_per_s": 80.0}]}  # fmt: skip
    samples = [{"t_s": 0.0, "cpu_cores": 0.0, "rss_mb": 900.0},
               {"t_s": 5.0, "cpu_cores": 0.7, "rss_mb": 910.0}]  # fmt: skip
    by_type = {"single": {"recall@10": 0.9, "n": 4}, "deleted": {"n": 2, "leak": 0.0}}
    quality = {"memstream": {"by_type": by_type}, "modes": {"memstream_dense": {"by_type": by_type}},
               "baselines": {"bm25": {"by_type": by_type}, "seconds": 1.0}}  # fmt: skip
    made = [
        bench_charts.recall_latency(recall, tmp_path / "a.png"),
        bench_charts.over_time([[0, 3.0], [1, 4.0]], tmp_path / "b.png", "t", "y"),
        bench_charts.freshness([10.0, 20.0, 30.0], {"p50": 20.0}, tmp_path / "c.png"),
        bench_charts.quality_by_type(quality, tmp_path / "d.png"),
        bench_charts.node(samples, tmp_path / "e.png", "node"),
    ]
    assert all(p is not None and _is_png(p) for p in made)
    assert bench_charts.recall_latency({"phases": []}, tmp_path / "x.png") is None
    assert bench_charts.over_time([], tmp_path / "y.png", "t", "y") is None
    assert bench_charts.freshness([], {}, tmp_path / "z.png") is None
    assert bench_charts.node(samples[:1], tmp_path / "w.png", "node") is None
    assert not list(tmp_path.glob("[xyzw].png"))


# ------------------------------------------------------------------ a report
def _no_nan(name: str) -> None:
    raise AssertionError(f"{name} in report.json")


def test_a_failed_bench_is_a_row_and_a_section_and_the_compare_is_kept(tmp_path: Path) -> None:
    benches = {"soak": {"bench": "soak", "error": "RuntimeError: node did not start",
                        "recall_ms": {"p50": float("nan")}}}  # fmt: skip
    old = {"benches": {"soak": {"requests": 3}}}
    started = datetime.now(UTC)
    folder = bench_report.write(tmp_path, benches, started=started, command=["memstream", "x"],
                                old=old, old_path=Path("old.json"))  # fmt: skip
    again = bench_report.write(tmp_path, benches, started=started, command=["memstream", "x"])
    assert folder != again and folder.parent == again.parent == tmp_path  # same second: -2
    doc = json.loads((folder / "report.json").read_text(), parse_constant=_no_nan)
    assert doc["benches"]["soak"]["recall_ms"] == {"p50": None}  # strict JSON: no NaN
    assert set(doc) == {"report", "summary", "benches", "compare"}
    assert set(doc["report"]) == {"started_at", "seconds", "command", "machine"}
    assert doc["summary"][0]["bench"] == "soak" and "failed" in doc["summary"][0]["notes"]
    assert doc["compare"] == {"old": "old.json", "rows": []}
    md = (folder / "report.md").read_text()
    assert "## Summary" in md and "node did not start" in md and "## Machine" in md
    assert "Compared with an earlier run" in md and not list(folder.glob("*.png"))


def test_bench_all_reads_its_subset_and_each_bench_verdict() -> None:
    assert bench_all._only("soak,recall") == ["recall", "soak"]
    for bad in ("nope", ",", "recall,nope"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench_all._only(bad)
    assert not bench_all.passed("soak", {"error": "x"})
    assert bench_all.passed("ingest", {"missing_tasks": 0, "failed_tasks": 0})
    assert not bench_all.passed("quality", {"ingest": {"missing_tasks": 1, "failed_tasks": 0}})
    phase = {"codes": {"0": 5, "50401": 1}}
    assert not bench_all.passed("recall", {"phases": [phase]})
    assert bench_all.passed("recall", {"phases": [{"codes": {"0": 5}}], "fit_phases": []})
    assert bench_all.verdict("soak", {"error": "x"}) == "error"
    assert bench_all.verdict("recall", {"phases": [phase]}) == "failed"  # figures, one timeout
    assert bench_all.verdict("ingest", {"missing_tasks": 0, "failed_tasks": 0}) == "ok"
