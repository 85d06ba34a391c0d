"""Recovery partitions split between the processes of a cluster, as the chart's pods keep
them (each on its own volume, ``init_partition_share``): Bytewax runs a 2-process cluster
on them and resumes it from them. A trivial flow on loopback, not the ingest flow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dataflows.runner import init_partition_share
from ops.procs import free_port

REPO = Path(__file__).resolve().parents[3]
SCRIPT = """
import json, sys
from datetime import timedelta
from pathlib import Path
import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.recovery import RecoveryConfig
from bytewax.run import cli_main
from bytewax.testing import TestingSource

out, proc, addrs, rec = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(";"), sys.argv[4]
flow = Dataflow("shares")
nums = op.input("in", flow, TestingSource(range(40)))
keyed = op.key_on("key", nums, lambda n: str(n % 4))
sums = op.stateful_map("sum", keyed, lambda s, n: ((s or 0) + n,) * 2)
def write(kv):
    with out.open("a") as fh:
        fh.write(json.dumps(kv) + "\\n")
op.inspect("out", sums, lambda _step, kv: write(kv))
cli_main(flow, workers_per_process=1, process_id=proc, addresses=addrs,
         epoch_interval=timedelta(seconds=1),
         recovery_config=RecoveryConfig(Path(rec), timedelta(0)))
"""


def _run_cluster(tmp_path: Path, dirs: list[Path], run: int, ok: bool = True) -> list[list]:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    addrs = ";".join(f"127.0.0.1:{free_port()}" for _ in dirs)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    outs = [tmp_path / f"out-{run}-{i}.jsonl" for i in range(len(dirs))]
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(outs[i]), str(i), addrs, str(d)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, d in enumerate(dirs)
    ]
    codes = []
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0 or not ok, err[-2000:]
        codes.append(p.returncode)
    if not ok:
        assert any(codes), "the cluster ran without one of its shares"
    return [json.loads(line) for o in outs if o.exists() for line in o.read_text().splitlines()]


def test_a_two_process_cluster_runs_and_resumes_on_split_partitions(tmp_path):
    dirs = [tmp_path / f"rec{i}" for i in range(2)]
    shares = [init_partition_share(d, 2, i, 2) for i, d in enumerate(dirs)]
    assert shares == [["part-0.sqlite3"], ["part-1.sqlite3"]]
    first = _run_cluster(tmp_path, dirs, 1)
    finals = {}
    for key, total in first:
        finals[key] = max(finals.get(key, 0), total)
    assert finals == {str(k): sum(range(k, 40, 4)) for k in range(4)}
    assert len(first) == 40  # every item once, over both processes
    # The restart finds each process's own share again: it resumes after the end of the
    # input (nothing replayed), which it could not do without every partition.
    again = [init_partition_share(d, 2, i, 2) for i, d in enumerate(dirs)]
    assert again == shares
    assert _run_cluster(tmp_path, dirs, 2) == []


def test_a_cluster_missing_one_share_does_not_resume(tmp_path):
    """What each pod's volume holds is part of the cluster's state, not a copy."""
    dirs = [tmp_path / f"rec{i}" for i in range(2)]
    for i, d in enumerate(dirs):
        init_partition_share(d, 2, i, 2)
    assert len(_run_cluster(tmp_path, dirs, 1)) == 40
    for f in dirs[1].iterdir():  # process 1's volume lost
        f.unlink()
    _run_cluster(tmp_path, dirs, 2, ok=False)
