"""`memstream bench soak` for a few seconds: a real node with keys on, every operation of
the mix answered, no 5xx but a truthful 50301, the node's numbers sampled, a report with
its charts — the harness, never the numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.bench.soak import MIX
from tests.helpers.bench_report import assert_report_charts
from tests.helpers.stack_cli import cli, private_stack_env

pytestmark = pytest.mark.e2e


def test_a_short_soak_reports_codes_latency_and_node_numbers(tmp_path: Path) -> None:
    env, _ = private_stack_env(tmp_path / "data")
    done = cli(env, "bench", "soak", "--duration", "6", "--warmup", "2", "--clients", "2",
               "--users", "4", "--out", str(tmp_path / "out"), timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    result = json.loads(done.stdout)
    (path,) = (tmp_path / "out").glob("*/report.json")
    assert result["json_path"] == str(path)
    assert json.loads(path.read_text())["benches"]["soak"]["requests"] == result["requests"]
    assert_report_charts(path.parent, {"soak-throughput.png", "soak-node.png", "soak-heaps.png"})
    assert result["series"]["requests_per_s"] and result["node"]["cpu_cores_mean"] >= 0
    assert set(result["recall_ms"]) == {"p50", "p95", "p99", "max"}
    assert result["bench"] == "soak" and result["requests"] > 0
    assert result["config"]["warmup_s"] == 2  # measured after 2 s of the same load
    assert set(result["codes"]) <= {op for op, _ in MIX} and "recall" in result["codes"]
    for op, codes in result["codes"].items():
        for code in codes:
            # 40401: raced with a purge; a 5xx brings the node's logged cause along
            assert code in ("0", "40401", "50301"), (op, codes, result["node_errors"])
    assert result["recall_ms"]["p50"] > 0 and result["recalls_ok"] > 0
    node = result["node"]
    for when in ("load_start", "start", "end"):  # load_start: before the warm-up
        assert node[when]["rss_mb"] > 0 and node[when]["open_files"] > 0
        assert node[when]["threads"] > 0
    assert len(node["samples"]) >= 2
    assert node["end"]["rss_anon_mb"] > 0 and node["end"]["rss_file_mb"] > 0
    inside = node["inside"]["end"]  # the node's own account, by GET /admin/v1/stats
    assert inside["python"]["allocated_blocks"] > 0, inside
    assert inside["clickhouse"]["GlobalThread"] > 0 and inside["hot_cache"]["users"] > 0
    held = node["heaps_mb"]["end"]  # each allocator's share, from the same account
    assert held["pymalloc_arenas"] >= held["pymalloc_in_use"] > 0
    assert held["glibc_in_use"] > 0 and held["jemalloc_resident"] > 0
    assert held["milvus_arrow"] > 0  # embedded Milvus Lite's segments and memtable
    counted = node["counts"]["end"]  # what the growth could be made of, in entries
    assert counted["milvus_rows"] > 0 and counted["lru_term_counts"] > 0
    accounts = node["accounts"]  # start and end at least: the chart's points
    assert len(accounts) >= 2 and accounts[-1]["heaps_mb"] == held
    kinds = node["open_files_by_kind"]["end"]
    assert kinds.get("thread stats (exited)", 0) == 0  # per-thread handles do not leak
