"""The node process stops at start on a store of another embedding model; after
`memstream reembed` it starts.

The store is made in its own data dir by a subprocess (chDB allows one data dir per
process) holding vectors of the tiny test model; the node is configured with the default
model. Kafka and Redis are the session's, under a topic prefix and another Redis db.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ops.procs import free_port
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

SEED_SCRIPT = """
from core.settings import load_settings
from dataflows.runtime import Runtime
from core.write_batch import WriteBatch
from sinks.stores import Stores
from tests.helpers.embedders import HashedWords
from tests.integration.test_recall_api import record

s = load_settings()
st = Stores.from_settings(s); st.setup(); st.kafka.ensure_topics()
rt = Runtime.build(s, st, embedder=HashedWords(s.embedding_dim))  # empty: records it
memories = [record(42, "I am allergic to peanuts"), record(42, "I live in Lisbon")]
vectors = rt.embedder.embed([m.content for m in memories])
rt.memories.write(WriteBatch(memories, {m.memory_id: v for m, v in zip(memories, vectors)}))
st.kafka.flush(10)
st.close()
"""


def _env(servers, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env.update(
        {
            "MEMSTREAM_DATA_DIR": str(data_dir),
            "MEMSTREAM_API_PORT": str(free_port()),
            "MEMSTREAM_KAFKA_BOOTSTRAP": servers.kafka_bootstrap,
            "MEMSTREAM_KAFKA_PARTITIONS": "2",
            "MEMSTREAM_KAFKA_TOPIC_PREFIX": f"model{uuid.uuid4().hex[:8]}.",
            "MEMSTREAM_REDIS_URL": servers.redis_url.rsplit("/", 1)[0] + "/2",
            "MEMSTREAM_LOG_JSON": "false",
        }
    )
    return env


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=240, check=False
    )


def test_node_refuses_a_store_of_another_model_until_reembed(servers, tmp_path) -> None:
    env = _env(servers, tmp_path / "node")
    seeded = _run([sys.executable, "-c", SEED_SCRIPT], env)
    assert seeded.returncode == 0, seeded.stderr

    refused = _run([sys.executable, "-m", "ops.node", str(tmp_path / "node")], env)
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "memstream node: the store's vectors were made by" in refused.stderr
    assert "test:hashed-words-384" in refused.stderr and "memstream reembed" in refused.stderr

    cli = [sys.executable, "-m", "ops.cli", "reembed"]
    dry = _run([*cli, "--dry-run"], env)
    assert dry.returncode == 0 and "to embed: 2" in dry.stdout, dry.stderr[-2000:]
    done = _run(cli, env)
    assert done.returncode == 0 and "re-embedded 2 memories" in done.stdout, done.stderr[-2000:]

    log = tmp_path / "node.log"
    with open(log, "wb") as out:
        node = subprocess.Popen(
            [sys.executable, "-m", "ops.node", str(tmp_path / "node")],
            env=env,
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(lambda: "node starting" in log.read_text(errors="replace"), timeout=180)
    finally:
        node.send_signal(signal.SIGTERM)
        node.wait(60)
