"""SIGKILL the node in the middle of ingesting 500 conversations; restart; every fact once.

The node runs as a real subprocess (ops.stack.start_node) with its own data dir and its
own topic prefix on the session's Kafka, so nothing it does is seen by other tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from ops import stack
from ops.procs import free_port
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e

FACTS = (
    "I work as a carpenter.",
    "My favourite fruit is mango.",
    "I have a dog named Biscuit.",
    "I was born in Lisbon.",
    "I play the violin every evening.",
)
N_USERS, PER_USER = 100, len(FACTS)
REPO = Path(__file__).resolve().parents[2]

COUNT_SCRIPT = """
import json, sys
from core.settings import load_settings
from sinks.stores import Stores
s = load_settings()
st = Stores.from_settings(s); st.clickhouse.setup(); st.milvus.setup()
lo, hi = int(sys.argv[1]), int(sys.argv[2])
q = lambda sql: st.clickhouse.query(sql, {"lo": lo, "hi": hi})
span = "user_id >= {lo:UInt64} AND user_id < {hi:UInt64}"
# the users' own memories; their stored profiles apart (docs/architecture.md#the-profile)
where = span + " AND NOT startsWith(memory_id, 'p_')"
ids = [str(u) for u in range(lo, hi)]
vectors = st.milvus.query('user_id in ' + json.dumps(ids), ["memory_id"], limit=16384)
print(json.dumps({
  "memories": q(f"SELECT count() FROM memstream.memories FINAL WHERE {where}")[0][0],
  "hashes": q(f"SELECT uniqExact(user_id, content_hash) FROM memstream.memories FINAL WHERE {where}")[0][0],
  "adds": q(f"SELECT count() FROM memstream.memory_changelog FINAL WHERE {where} AND op_type = 'ADD'")[0][0],
  "changes": q(f"SELECT count() FROM memstream.memory_changelog FINAL WHERE {where}")[0][0],
  "vectors": len({v["memory_id"] for v in vectors}),
  "profiles": q(f"SELECT count() FROM memstream.memories FINAL WHERE {span} "
                "AND startsWith(memory_id, 'p_') AND status = 'ACTIVE'")[0][0],
}))
"""


def _env(servers, data_dir: Path, prefix: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env.update(
        {
            "MEMSTREAM_DATA_DIR": str(data_dir),
            "MEMSTREAM_API_PORT": str(free_port()),
            "MEMSTREAM_KAFKA_BOOTSTRAP": servers.kafka_bootstrap,
            "MEMSTREAM_KAFKA_PARTITIONS": "2",
            "MEMSTREAM_KAFKA_TOPIC_PREFIX": prefix,
            "MEMSTREAM_REDIS_URL": servers.redis_url.rsplit("/", 1)[0] + "/1",
        }
    )
    return env


def test_sigkill_mid_ingest_then_restart_stores_every_fact_exactly_once(servers, tmp_path) -> None:
    prefix = f"crash{uuid.uuid4().hex[:8]}."
    data_dir = tmp_path / "node"
    env = _env(servers, data_dir, prefix)
    base_user = 10_000_000 + int(uuid.uuid4().int % 1_000_000) * 1000
    r = redis.Redis.from_url(env["MEMSTREAM_REDIS_URL"], decode_responses=True)
    node = stack.proc(data_dir, "node")
    stack.start_node(data_dir, env)
    try:
        admin = AdminClient({"bootstrap.servers": servers.kafka_bootstrap})
        wait_for(
            lambda: f"{prefix}memory.conversations" in admin.list_topics(timeout=5).topics,
            timeout=120,
            what="the node's topics",
        )
        producer = Producer({"bootstrap.servers": servers.kafka_bootstrap, "linger.ms": 5})
        tasks, events = [], []
        for i in range(PER_USER):
            for u in range(N_USERS):
                task = f"crash-{base_user}-{u}-{i}"
                tasks.append(task)
                events.append(
                    (
                        str(base_user + u).encode(),
                        json.dumps(
                            {
                                "task_id": task,
                                "user_id": base_user + u,
                                "messages": [
                                    {"role": "user", "content": FACTS[i], "msg_id": f"m{i}"}
                                ],
                            }
                        ).encode(),
                    )
                )

        def produce(batch: list, per_s: float) -> None:
            for key, value in batch:
                producer.produce(f"{prefix}memory.conversations", key=key, value=value)
                producer.poll(0)
                time.sleep(1 / per_s)
            assert producer.flush(30) == 0

        def done() -> int:
            pipe = r.pipeline()
            for t in tasks:
                pipe.hget(f"task:{t}", "status")
            return sum(1 for s in pipe.execute() if s == "done")

        # a first wave, fully processed; the rest keeps arriving while the node is killed
        produce(events[:N_USERS], per_s=2000)
        wait_for(lambda: done() >= 60, timeout=180, interval=0.05, what="the first wave")
        rest = threading.Thread(target=produce, args=(events[N_USERS:], 200.0))
        rest.start()
        time.sleep(0.8)
        pid = node.pid()
        assert pid is not None
        os.killpg(pid, signal.SIGKILL)
        wait_for(lambda: node.pid() is None, timeout=10, what="the node to die")
        assert done() < len(tasks), "the kill came too late to test anything"
        rest.join(60)

        stack.start_node(data_dir, env)
        wait_for(lambda: done() == len(tasks), timeout=300, interval=0.5, what="all tasks done")
    finally:
        node.stop()
    out = subprocess.run(
        [sys.executable, "-c", COUNT_SCRIPT, str(base_user), str(base_user + N_USERS)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    counts = json.loads(out.stdout.strip().splitlines()[-1])
    total = N_USERS * PER_USER
    assert counts == {
        "memories": total,
        "hashes": total,
        "adds": total,
        "changes": total,
        "vectors": total,
        "profiles": N_USERS,  # one GLOBAL profile each, however often replayed
    }
