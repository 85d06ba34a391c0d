"""The embed step's shards (``dataflows.ingest.shards``): one per worker of the cluster,
each running on its own worker, a user's on the worker of their writer. Checked against
Bytewax's own routing: a keyed step in a real cluster (3 workers in one process; 2
processes of 2 workers on loopback), each worker's sink saying which keys it got."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dataflows.ingest.shards import embed_shard, route, shard_keys, shard_worker
from ops.procs import free_port

REPO = Path(__file__).resolve().parents[3]

# A keyed step, then a sink that records on which worker each key's items arrived.
SCRIPT = """
import json, sys
import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.outputs import DynamicSink, StatelessSinkPartition
from bytewax.run import cli_main
from bytewax.testing import TestingSource

out, workers, proc, addrs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
keys = json.loads(sys.argv[5])

class Part(StatelessSinkPartition):
    def __init__(self, worker):
        self.worker = worker
    def write_batch(self, items):
        with open(out, "a") as fh:
            for key, _ in items:
                fh.write(json.dumps([key, self.worker]) + "\\n")

class Sink(DynamicSink):
    def build(self, step_id, worker_index, worker_count):
        return Part(worker_index)

flow = Dataflow("shards")
xs = op.input("in", flow, TestingSource(keys))
st = op.stateful_map("owner", op.key_on("key", xs, lambda k: k), lambda s, v: (s, v))
op.output("out", st, Sink())
cluster = {} if proc == "-" else {"process_id": int(proc), "addresses": addrs.split(";")}
cli_main(flow, workers_per_process=workers, **cluster)
"""

USERS = [f"default|{u}" for u in range(1_000, 1_200)] + ["acme|7", "default|7"]


def _where_keys_ran(tmp_path: Path, keys: list[str], workers: int, processes: int) -> dict:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out.jsonl"
    addrs = ";".join(f"127.0.0.1:{free_port()}" for _ in range(processes))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(out), str(workers)]
            + ([str(i), addrs] if processes > 1 else ["-", "-"])
            + [json.dumps(keys)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(processes)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]
    seen: dict[str, set[int]] = {}
    for line in out.read_text().splitlines():
        key, worker = json.loads(line)
        seen.setdefault(key, set()).add(worker)
    return seen


@pytest.mark.parametrize("workers", [1, 2, 3, 4, 8])
def test_one_shard_per_worker_and_every_worker_gets_users(workers: int) -> None:
    keys = shard_keys(workers)
    assert len(set(keys)) == workers
    assert [route(k, workers) for k in keys] == list(range(workers))
    assert [shard_worker(k, workers) for k in keys] == list(range(workers))
    owners = {shard_worker(embed_shard(u, workers), workers) for u in USERS}
    assert owners == set(range(workers))
    # a user's shard is on the worker of their writer (keyed by the same user key)
    assert all(shard_worker(embed_shard(u, workers), workers) == route(u, workers) for u in USERS)


def test_one_worker_keeps_one_shard_for_all_users() -> None:
    assert {embed_shard(u, 1) for u in USERS} == {shard_keys(1)[0]}


def test_route_is_where_bytewax_runs_a_key_in_one_process(tmp_path: Path) -> None:
    keys = [*USERS[:60], *shard_keys(3), "all"]
    seen = _where_keys_ran(tmp_path, keys, workers=3, processes=1)
    assert seen == {k: {route(k, 3)} for k in keys}
    assert {w for k in shard_keys(3) for w in seen[k]} == {0, 1, 2}


def test_route_is_where_bytewax_runs_a_key_in_a_two_process_cluster(tmp_path: Path) -> None:
    """2 processes x 2 workers: worker indexes are the cluster's (0..3), and each of the
    4 shards runs on its own one of them."""
    keys = [*USERS[:60], *shard_keys(4)]
    seen = _where_keys_ran(tmp_path, keys, workers=2, processes=2)
    assert seen == {k: {route(k, 4)} for k in keys}
    assert [min(seen[k]) for k in shard_keys(4)] == [0, 1, 2, 3]
