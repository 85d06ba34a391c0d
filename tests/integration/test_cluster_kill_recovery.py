"""A 2-process Bytewax cluster on loopback, one process killed with SIGKILL mid-stream and
the cluster restarted with the same worker count: nothing lost, nothing counted twice.

The flow has the ingest flow's shape where recovery matters: the project's Kafka source
(a real topic of 2 partitions on the session's broker), a keyed stateful step per user
(here a running count and sum of the user's items, as the writer's state is per user),
routed through the embed shards (``dataflows.ingest.shards``) first, with each process
holding its own share of the recovery partitions (``init_partition_share``), as the
chart's pods do. The ingest flow itself needs a ClickHouse server shared by both
processes (embedded chDB is one process's), which this machine does not have; see
``test_ingest_workers`` for the ingest flow on 2 workers.

What each user's state says at the end must be exactly their items: an item replayed
after the kill is applied to the state restored from the snapshot before it, so it
counts once. Output is at least once (a replay emits again), which is why the ingest
writer's ids are deterministic; here the output is a Redis hash keyed by item.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from dataflows.runner import init_partition_share
from ops.procs import free_port
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
N_USERS, PER_USER = 12, 25

SCRIPT = """
import json, sys, threading, time
from datetime import timedelta
from pathlib import Path
import bytewax.operators as op
import redis
from bytewax.dataflow import Dataflow
from bytewax.recovery import RecoveryConfig
from bytewax.run import cli_main
from dataflows.ingest.shards import embed_shard
from dataflows.sources import StoppableKafkaSource

brokers, topic, redis_url, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
proc, addrs, rec, workers = int(sys.argv[5]), sys.argv[6].split(";"), sys.argv[7], int(sys.argv[8])
total = workers * len(addrs)
r = redis.Redis.from_url(redis_url)
src = StoppableKafkaSource([brokers], [topic], tail=False, batch_size=5, stop=threading.Event())
flow = Dataflow("killed")
msgs = op.input("in", flow, src)
items = op.map("parse", msgs, lambda m: json.loads(m.value))
shard = op.key_on("shard", items, lambda it: embed_shard(str(it["user"]), total))
items = op.key_rm("unshard", op.stateful_map("pass", shard, lambda s, it: (None, it)))
by_user = op.key_on("by_user", items, lambda it: str(it["user"]))

def apply(state, it):
    time.sleep(0.02)  # slow enough to be killed mid-stream
    count, total_ = state or (0, 0)
    state = (count + 1, total_ + it["seq"])
    return state, (it["seq"], state)

applied = op.stateful_map("apply", by_user, apply)

def write(kv):
    user, (seq, (count, total_)) = kv
    r.hset(out, f"{user}:{seq}", json.dumps([count, total_]))
    r.hincrby(out + ":emits", f"{user}:{seq}", 1)

op.inspect("out", applied, lambda _step, kv: write(kv))
cli_main(flow, workers_per_process=workers, process_id=proc, addresses=addrs,
         epoch_interval=timedelta(seconds=0.3),
         recovery_config=RecoveryConfig(Path(rec), timedelta(0)))
"""


def _start(tmp_path, servers, topic, out, dirs, workers) -> list[subprocess.Popen]:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    addrs = ";".join(f"127.0.0.1:{free_port()}" for _ in dirs)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return [
        subprocess.Popen(
            [
                sys.executable,
                str(script),
                servers.kafka_bootstrap,
                topic,
                servers.redis_url,
                out,
                str(i),
                addrs,
                str(d),
                str(workers),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, d in enumerate(dirs)
    ]


def test_sigkill_one_process_then_restart_loses_and_doubles_nothing(servers, tmp_path) -> None:
    topic = f"killed-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": servers.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": servers.kafka_bootstrap})
    for seq in range(PER_USER):
        for u in range(N_USERS):
            item = {"user": u, "seq": seq}
            producer.produce(topic, key=str(u).encode(), value=json.dumps(item).encode())
    assert producer.flush(30) == 0
    r = redis.Redis.from_url(servers.redis_url, decode_responses=True)
    out = f"out:{topic}"
    workers = 2
    dirs = [tmp_path / f"rec{i}" for i in range(2)]
    for i, d in enumerate(dirs):  # 2 processes x 2 workers: 4 partitions, 2 on each volume
        init_partition_share(d, 4, i, 2)

    first = _start(tmp_path, servers, topic, out, dirs, workers)
    try:
        wait_for(lambda: r.hlen(out) >= 40, timeout=90, interval=0.05, what="output")
        first[1].send_signal(signal.SIGKILL)
        first[1].wait(10)
        # its peer cannot go on without it: it fails (or is stopped, as a pod would be)
        try:
            first[0].wait(20)
        except subprocess.TimeoutExpired:
            first[0].kill()
            first[0].wait(10)
    finally:
        for p in first:
            if p.poll() is None:
                p.kill()
                p.wait(10)
    emitted = r.hlen(out)
    assert emitted < N_USERS * PER_USER, "the kill came after the end: nothing was tested"

    time.sleep(0.5)
    again = [init_partition_share(d, 4, i, 2) for i, d in enumerate(dirs)]
    assert again == [["part-0.sqlite3", "part-2.sqlite3"], ["part-1.sqlite3", "part-3.sqlite3"]]
    second = _start(tmp_path, servers, topic, out, dirs, workers)
    for p in second:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-2000:]

    got = r.hgetall(out)
    # nothing lost: every item of every user went through the keyed step
    assert set(got) == {f"{u}:{s}" for u in range(N_USERS) for s in range(PER_USER)}
    # nothing doubled: the state after a user's item seq is their items 0..seq, once each
    for u in range(N_USERS):
        for seq in range(PER_USER):
            assert json.loads(got[f"{u}:{seq}"]) == [seq + 1, sum(range(seq + 1))], (u, seq)
    # output is at least once: what was emitted before the kill and not yet snapshotted
    # is emitted again, with the same state
    emits = r.hgetall(f"{out}:emits")
    assert len(emits) == N_USERS * PER_USER and all(int(v) >= 1 for v in emits.values())
    r.delete(out, f"{out}:emits")
