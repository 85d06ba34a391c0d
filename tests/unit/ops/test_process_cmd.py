"""`memstream api` / `memstream dataflow`: their arguments, and the refusal to start on an
embedded store (a process started alone would open a store no other process sees)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.settings import Settings, get_settings
from dataflows.runner import init_partition_share, partition_share
from ops.cli import build_parser, main
from ops.process_cmd import embedded_stores, plan_from_args, runs_passes

REPO = Path(__file__).resolve().parents[3]
SERVERS = {
    "MEMSTREAM_CLICKHOUSE_URL": "http://clickhouse.invalid:8123",
    "MEMSTREAM_MILVUS_URI": "http://milvus.invalid:19530",
}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A clean MEMSTREAM_* environment on a fresh data dir; settings rebuilt per test."""
    for name in list(os.environ):
        if name.startswith("MEMSTREAM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMSTREAM_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["dataflow", *argv])


def _settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", **{k[10:].lower(): v for k, v in SERVERS.items()})


@pytest.mark.parametrize("argv", [["api"], ["dataflow", "ingest"], ["dataflow", "lifecycle"]])
def test_every_process_refuses_the_embedded_stores_and_touches_nothing(env, tmp_path, capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "ClickHouse is embedded chDB" in err and "MEMSTREAM_CLICKHOUSE_URL" in err
    assert "Milvus is embedded Milvus Lite" in err and "MEMSTREAM_MILVUS_URI" in err
    assert "memstream up" in err
    assert not (tmp_path / "data").exists()  # refused before any store was opened


def test_one_embedded_store_is_enough_to_refuse_and_only_it_is_named(env, capsys):
    env.setenv("MEMSTREAM_CLICKHOUSE_URL", SERVERS["MEMSTREAM_CLICKHOUSE_URL"])
    assert main(["dataflow", "ingest"]) == 2
    err = capsys.readouterr().err
    assert "Milvus is embedded" in err and "ClickHouse is embedded" not in err


@pytest.mark.parametrize(
    "extra, says",
    [
        ({"MEMSTREAM_API_HOST": "0.0.0.0"}, "listens on loopback only"),
        (
            {"MEMSTREAM_LOCAL_MODE": "false", "MEMSTREAM_ENCRYPTION_KEY": "k" * 48},
            "local_mode is false: create an API key",
        ),
    ],
)
def test_the_api_with_no_key_refuses_to_open_beyond_loopback(env, tmp_path, capsys, extra, says):
    for name, value in {**SERVERS, **extra}.items():
        env.setenv(name, value)
    assert main(["api"]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "data").exists()  # refused before any store was opened


def test_an_explicit_chdb_url_or_milvus_path_is_embedded_too(tmp_path):
    s = Settings(clickhouse_url=f"chdb://{tmp_path}/ch", milvus_uri=str(tmp_path / "m.db"))
    assert len(embedded_stores(s)) == 2
    assert embedded_stores(_settings(tmp_path)) == []


def test_the_console_script_refuses_with_the_message(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env.update(MEMSTREAM_DATA_DIR=str(tmp_path / "d"), PYTHONPATH=str(REPO))
    env["MEMSTREAM_MILVUS_URI"] = SERVERS["MEMSTREAM_MILVUS_URI"]
    out = subprocess.run(
        [sys.executable, "-m", "ops.cli", "api"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr.startswith("memstream api: a process started alone needs its stores")
    assert "ClickHouse is embedded chDB" in out.stderr and "Milvus" not in out.stderr


def test_defaults_are_one_worker_one_process_recovery_in_the_data_dir(tmp_path):
    plan = plan_from_args(_args("ingest"), _settings(tmp_path))
    assert (plan.workers, plan.process_id, plan.addresses) == (1, None, ())
    assert plan.processes == 1 and plan.partitions == 1 and plan.leader
    assert plan.recovery_dir == (tmp_path / "data").resolve() / "recovery" / "ingest"
    assert (plan.snapshot_s, plan.backup_s) == (2.0, 0.0)


def test_a_cluster_process_takes_bytewax_w_i_a(tmp_path):
    args = _args("lifecycle", "-w", "2", "-i", "1", "-a", "p0:2101; p1:2101;p2:2101", "-r", "/rec")
    plan = plan_from_args(args, _settings(tmp_path))
    assert plan.addresses == ("p0:2101", "p1:2101", "p2:2101")
    assert (plan.workers, plan.process_id, plan.processes) == (2, 1, 3)
    assert plan.partitions == 6 and plan.recovery_dir == Path("/rec") and not plan.leader
    assert plan.snapshot_s == 10.0  # several workers: longer epochs (dataflows.epochs)
    assert (
        plan_from_args(_args("ingest", "-w", "2", "-s", "3"), _settings(tmp_path)).snapshot_s == 3
    )
    assert (
        plan_from_args(_args("ingest", "--no-recovery"), _settings(tmp_path)).recovery_dir is None
    )


@pytest.mark.parametrize(
    "argv, says",
    [
        (["-i", "0"], "go together"),
        (["-a", "p0:1;p1:1"], "go together"),
        (["-i", "2", "-a", "p0:1;p1:1"], "not one of the 2 addresses"),
        (["-i", "0", "-a", "p0"], "is not host:port"),
        (["-w", "0"], "at least 1"),
        (["-s", "0"], "more than 0 seconds"),
        (["-s", "-2"], "more than 0 seconds"),
        (["-s", "nan"], "more than 0 seconds"),
        (["-s", "inf"], "more than 0 seconds"),
        (["-i", "0", "-a", "p0:1;p1:1", "--recovery-partitions", "1"], "fewer than the 2"),
    ],
)
def test_inconsistent_cluster_arguments_are_refused(tmp_path, argv, says):
    with pytest.raises(ValueError, match=says):
        plan_from_args(_args("ingest", *argv), _settings(tmp_path))


def test_bad_cluster_arguments_exit_2_before_any_store_is_opened(env, tmp_path, capsys):
    for name, value in SERVERS.items():
        env.setenv(name, value)
    assert main(["dataflow", "ingest", "-i", "0"]) == 2
    assert (
        "memstream dataflow ingest: -i/--process-id and -a/--addresses" in capsys.readouterr().err
    )
    assert not (tmp_path / "data").exists()


def test_an_unknown_flow_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["dataflow", "decay"])
    assert exc.value.code == 2


def test_partition_shares_are_disjoint_and_cover_every_partition():
    for count, processes in [(1, 1), (4, 2), (6, 3), (7, 3)]:
        shares = [partition_share(count, i, processes) for i in range(processes)]
        flat = sorted(p for s in shares for p in s)
        assert flat == list(range(count)) and all(shares)
    with pytest.raises(ValueError):
        partition_share(1, 0, 2)
    with pytest.raises(ValueError):
        partition_share(4, 2, 2)


def test_each_process_makes_only_its_partitions_once_and_keeps_them_on_restart(tmp_path):
    dirs = [tmp_path / f"p{i}" for i in range(2)]
    made = [init_partition_share(d, 4, i, 2) for i, d in enumerate(dirs)]
    assert made == [
        ["part-0.sqlite3", "part-2.sqlite3"],
        ["part-1.sqlite3", "part-3.sqlite3"],
    ]
    assert sorted(p.name for p in dirs[0].iterdir()) == made[0]  # no init leftovers
    before = (dirs[0] / "part-0.sqlite3").stat().st_mtime_ns
    assert init_partition_share(dirs[0], 8, 0, 4) == made[0]  # a restart keeps its state
    assert (dirs[0] / "part-0.sqlite3").stat().st_mtime_ns == before


@pytest.mark.parametrize(
    ("argv", "passes"),
    [
        (["lifecycle"], True),  # the only process
        (["lifecycle", "-w", "2"], True),  # one pass thread, not one per worker
        (["lifecycle", "-w", "2", "-i", "0", "-a", "h0:1;h1:1"], True),
        (["lifecycle", "-w", "2", "-i", "1", "-a", "h0:1;h1:1"], False),
        (["ingest", "-i", "0", "-a", "h0:1;h1:1"], False),
    ],
)
def test_the_lifecycle_passes_run_in_process_0_only_whatever_its_workers(tmp_path, argv, passes):
    assert runs_passes(plan_from_args(_args(*argv), _settings(tmp_path))) is passes
