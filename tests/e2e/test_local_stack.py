"""`memstream up` / `down` / `up` on free ports: ready, idempotent, nothing left, data kept."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from core.derived import profile_id
from memstream.schemas.tenants import DEFAULT_TENANT
from ops import stack
from ops.procs import port_open
from tests.helpers.stack_cli import cli as _cli
from tests.helpers.stack_cli import private_stack_env

pytestmark = pytest.mark.e2e


@pytest.fixture
def stack_env(tmp_path: Path):
    env, ports = private_stack_env(tmp_path / "data")
    yield env, ports
    _cli(env, "down")


def _readyz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=3) as r:
            return r.status
    except OSError:
        return 0


def test_up_down_up_keeps_data_and_leaves_nothing(stack_env) -> None:
    env, ports = stack_env
    up = _cli(env, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"127.0.0.1:{ports['api']}" in up.stdout
    assert _readyz(ports["api"]) == 200

    again = _cli(env, "up")
    assert again.returncode == 0 and "already running" in again.stdout
    status = _cli(env, "status")
    assert status.returncode == 0 and "readyz 200" in status.stdout

    bootstrap = env["MEMSTREAM_KAFKA_BOOTSTRAP"]
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("memory.recall_hits", key=b"7", value=b'{"kept": true}')
    assert producer.flush(10) == 0

    down = _cli(env, "down")
    assert down.returncode == 0 and "node" in down.stdout
    time.sleep(0.5)
    for port in (ports["api"], ports["kafka"], ports["redis"]):
        assert not port_open("127.0.0.1", port), f"port {port} still listening"
    pids = Path(env["MEMSTREAM_DATA_DIR"], "run")
    assert not list(pids.glob("*.pid"))

    up2 = _cli(env, "up")
    assert up2.returncode == 0, up2.stdout + up2.stderr
    assert _readyz(ports["api"]) == 200
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "e2e-check"})
    consumer.assign([TopicPartition("memory.recall_hits", p, 0) for p in range(2)])
    values = []
    deadline = time.monotonic() + 15
    while not values and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            values.append(json.loads(msg.value()))
    consumer.close()
    assert values == [{"kept": True}]


def test_up_refuses_a_port_taken_by_someone_else(stack_env) -> None:
    import socket

    env, ports = stack_env
    with socket.socket() as s:
        s.bind(("127.0.0.1", ports["redis"]))
        s.listen()
        result = _cli(env, "up", timeout=60)
    assert result.returncode != 0
    assert "already in use" in result.stderr


def test_cli_sql_export_import_against_a_running_node(stack_env, tmp_path) -> None:
    import httpx

    env, ports = stack_env
    assert _cli(env, "up").returncode == 0
    api = f"http://127.0.0.1:{ports['api']}/memory/v1"
    added = httpx.post(
        f"{api}/add_structured",
        json={"user_id": 501, "app_id": "notes", "content": "I keep my keys in the blue bowl"},
        timeout=30,
    ).json()
    assert added["code"] == 0, added
    # the writer answered: both flows started first time, none failed on topics just made
    node_log = stack.proc(Path(env["MEMSTREAM_DATA_DIR"]), "node").logfile.read_text()
    assert "restarting in" not in node_log, node_log[-3000:]

    sql = _cli(
        env,
        "sql",
        "SELECT user_id, status FROM memstream.memories FINAL "
        "WHERE user_id = 501 AND mem_type != 'PROFILE'",
        timeout=60,
    )
    assert sql.returncode == 0, sql.stderr
    assert sql.stdout.splitlines() == ["user_id\tstatus", "501\tACTIVE"]
    refused = _cli(env, "sql", "DROP TABLE memstream.memories", timeout=60)
    assert refused.returncode != 0 and "syntax error" in refused.stderr.lower()
    count = "SELECT count() AS n FROM memstream.memories WHERE mem_type != 'PROFILE'"
    after = _cli(env, "sql", count, timeout=60)
    assert after.stdout.splitlines() == ["n", "1"]  # nothing dropped; the store still writes

    out = tmp_path / "u501.jsonl"
    exp = _cli(env, "export", "--user", "501", "--out", str(out), timeout=60)
    assert exp.returncode == 0, exp.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    memories = [x for x in lines if x["type"] == "memory"]
    assert [x["content"] for x in memories if x["mem_type"] != "PROFILE"] == [
        "I keep my keys in the blue bowl"
    ]
    # the export carries the stored profile; import skips it (docs/architecture.md#the-profile)
    theirs = profile_id(DEFAULT_TENANT, 501, "notes")
    assert [x["memory_id"] for x in memories if x["mem_type"] == "PROFILE"] == [theirs]
    imp = _cli(env, "import", str(out), "--user", "502", timeout=60)
    assert imp.returncode == 0, imp.stderr
    again = _cli(env, "import", str(out), "--user", "502", timeout=60)  # idempotent re-run
    assert again.returncode == 0
    listed = httpx.post(f"{api}/user/list", json={"user_id": 502}, timeout=30).json()["data"]
    assert listed["total"] == 1, (imp.stdout, imp.stderr, again.stdout, listed)
    assert theirs not in {p["memory_id"] for p in listed["profiles"]}
    assert listed["memories"]["APP"]["notes"][0]["content"] == "I keep my keys in the blue bowl"
