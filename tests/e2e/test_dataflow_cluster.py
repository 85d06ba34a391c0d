"""`memstream dataflow ingest` as a 2-process cluster (-i/-a on loopback), against one
1-process run of the same conversations: the same memories, change log and task results,
also across a SIGKILL of one process and a restart of the cluster.

The processes share their stores as a deployment's do: the session's Kafka and Redis,
a Milvus server (`milvus-lite server`) and a ClickHouse over HTTP. There is no ClickHouse
server on this machine, so the ClickHouse is ``tests.helpers.chdb_http``: the embedded
engine (chDB) behind ClickHouse's HTTP interface, one process for all of them. Each run
has its own topics (a prefix) and users; each event holds 2 turns and windows close at
2 turns, so every event is one batch whatever the timing, and the runs compare.
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
from confluent_kafka import Consumer, Producer

from core.derived import is_profile_id
from core.settings import Settings
from memstream.schemas.enums import MemType, Status
from ops.procs import free_port, port_open
from sinks.changelog import ChangeLog
from sinks.keyring import KeyRing
from sinks.memory_store import MemoryStore
from sinks.stores import Stores
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
N_USERS = 10
EVENTS = [  # each user's events in order; 2 turns each
    ["I live in Lisbon near the river.", "I work as a carpenter."],
    ["My favourite food is ramen with extra egg.", "I have a dog named Biscuit."],
    ["I live in Lisbon near the river.", "I play chess every Sunday."],
    ["I started learning the piano in 2019.", "My sister is called Ana."],
    ["I have a dog named Biscuit.", "I grow tomatoes on my balcony."],
    ["I work as a carpenter.", "I drink green tea every morning."],
]
FIRST_WAVE = 2  # events per user before the kill; the rest arrive around it
MASTER = "test-cluster-master-key-0123456789abcdef"


def _serve(cmd: list[str], port: int, what: str, log: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        cmd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    wait_for(lambda: port_open("127.0.0.1", port), timeout=60, what=what)
    return proc


@pytest.fixture(scope="module")
def shared_stores(tmp_path_factory: pytest.TempPathFactory):
    """(ClickHouse URL, Milvus URI): servers every process of these tests reaches."""
    tmp_path = tmp_path_factory.mktemp("shared-stores")
    ch_port, mv_port = free_port(), free_port()
    ch = _serve(
        [sys.executable, "-m", "tests.helpers.chdb_http", str(tmp_path / "ch"), str(ch_port)],
        ch_port,
        "chdb_http",
        tmp_path / "ch.log",
    )
    mv_exe = Path(sys.executable).with_name("milvus-lite")
    mv = _serve(
        [str(mv_exe), "server", "--data-dir", str(tmp_path / "mv")]
        + ["--host", "127.0.0.1", "--port", str(mv_port)],
        mv_port,
        "milvus-lite server",
        tmp_path / "mv.log",
    )
    try:
        yield f"http://127.0.0.1:{ch_port}", f"http://127.0.0.1:{mv_port}"
    finally:
        for p in (ch, mv):
            p.terminate()
            p.wait(15)


def _settings(servers, urls, prefix: str, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env.update(
        {
            "PYTHONPATH": str(REPO),
            "MEMSTREAM_DATA_DIR": str(data_dir),
            "MEMSTREAM_KAFKA_BOOTSTRAP": servers.kafka_bootstrap,
            "MEMSTREAM_KAFKA_PARTITIONS": "2",
            "MEMSTREAM_KAFKA_TOPIC_PREFIX": prefix,
            "MEMSTREAM_REDIS_URL": servers.redis_url,
            "MEMSTREAM_CLICKHOUSE_URL": urls[0],
            "MEMSTREAM_MILVUS_URI": urls[1],
            "MEMSTREAM_ENCRYPTION_KEY": MASTER,
            "MEMSTREAM_SESSION_MAX_TURNS": "2",
            "MEMSTREAM_SESSION_GAP_S": "600",
            "MEMSTREAM_LOG_JSON": "false",
        }
    )
    return env


def _start(
    env: dict, tmp_path: Path, name: str, n: int, flow: str = "ingest", workers: int = 1
) -> list[subprocess.Popen]:
    """``n`` processes of ``memstream dataflow FLOW`` (``workers`` each)."""
    addrs = ";".join(f"127.0.0.1:{free_port()}" for _ in range(n))
    procs = []
    for i in range(n):
        cluster = ["-i", str(i), "-a", addrs] if n > 1 else []
        argv = ["dataflow", flow, "-r", str(tmp_path / f"rec-{name}-{i}"), "-s", "0.5"]
        argv += ["-w", str(workers)]
        with (tmp_path / f"{name}-{i}.log").open("ab") as log:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "ops.cli", *argv, *cluster],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
    return procs


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)


def _events(prefix: str, base: int, which: range) -> list[tuple[str, bytes, bytes]]:
    out = []
    for i in which:
        for u in range(N_USERS):
            event = {
                "task_id": f"{prefix}{u}-{i}",
                "user_id": base + u,
                "session_id": "s1",
                "messages": [
                    {"role": "user", "content": t, "msg_id": f"{u}-{i}-{j}"}
                    for j, t in enumerate(EVENTS[i])
                ],
            }
            topic = f"{prefix}memory.conversations"
            out.append((topic, str(base + u).encode(), json.dumps(event).encode()))
    return out


def _produce(servers, events, per_s: float | None = None) -> None:
    producer = Producer({"bootstrap.servers": servers.kafka_bootstrap, "linger.ms": 5})
    for topic, key, value in events:
        producer.produce(topic, key=key, value=value)
        producer.poll(0)
        if per_s:
            time.sleep(1 / per_s)
    assert producer.flush(30) == 0


def _done(r: redis.Redis, prefix: str, upto: int) -> int:
    pipe = r.pipeline()
    for u in range(N_USERS):
        for i in range(upto):
            pipe.hget(f"task:{prefix}{u}-{i}", "status")
    return sum(1 for s in pipe.execute() if s == "done")


def _results(stores: Stores, memories: MemoryStore, prefix: str, base: int, r) -> dict:
    log = ChangeLog(stores.clickhouse, memories.cipher)
    out: dict = {"memories": {}, "changes": {}, "tasks": {}, "vectors": {}, "profiles": {}}
    for u in range(N_USERS):
        user = base + u
        loaded = memories.load(user, tenant="default")
        out["memories"][u] = sorted((m.content, str(m.status), str(m.level)) for m in loaded)
        rows, _ = log.query(user, tenant="default", limit=1000)
        # the memories' own change rows: a profile's versions follow how the inputs were
        # grouped into batches (timing), so only its final words are compared
        out["changes"][u] = sorted(
            (str(c.op_type), c.content_before, c.content_after, c.task_id.removeprefix(prefix))
            for c in rows
            if not is_profile_id(c.memory_id)
        )
        profiles = memories.load(
            user, [Status.ACTIVE], mem_types=[MemType.PROFILE], tenant="default"
        )
        out["profiles"][u] = sorted(m.content for m in profiles)
        hits = stores.milvus.query(f'user_id == "{user}"', ["memory_id"], limit=1000)
        out["vectors"][u] = len({h["memory_id"] for h in hits})
        out["tasks"][u] = [
            (r.hget(f"task:{prefix}{u}-{i}", "status"), r.hget(f"task:{prefix}{u}-{i}", "counts"))
            for i in range(len(EVENTS))
        ]
    return out


def test_a_two_process_cluster_and_a_kill_store_what_one_process_stores(
    servers, shared_stores, tmp_path
) -> None:
    r = redis.Redis.from_url(servers.redis_url, decode_responses=True)
    run = uuid.uuid4().hex[:8]
    base_one, base_two = 20_000_000 + (int(run, 16) % 100_000) * 100, 0
    base_two = base_one + 50
    total = N_USERS * len(EVENTS)

    # 1 process, every event, no kill
    one_prefix = f"one{run}."
    one = _start(_settings(servers, shared_stores, one_prefix, tmp_path / "d1"), tmp_path, "one", 1)
    try:
        _produce(servers, _events(one_prefix, base_one, range(len(EVENTS))))
        wait_for(lambda: _done(r, one_prefix, len(EVENTS)) == total, timeout=180, what="run 1")
    finally:
        _stop(one)

    # 2 processes; the second wave arrives while process 1 is SIGKILLed; restart both
    two_prefix = f"two{run}."
    env = _settings(servers, shared_stores, two_prefix, tmp_path / "d2")
    two = _start(env, tmp_path, "two", 2)
    try:
        _produce(servers, _events(two_prefix, base_two, range(FIRST_WAVE)))
        first = N_USERS * FIRST_WAVE
        wait_for(lambda: _done(r, two_prefix, FIRST_WAVE) == first, timeout=180, what="wave 1")
        rest = threading.Thread(
            target=_produce,
            args=(servers, _events(two_prefix, base_two, range(FIRST_WAVE, len(EVENTS))), 15.0),
        )
        rest.start()
        wait_for(lambda: _done(r, two_prefix, len(EVENTS)) > first + 3, timeout=60, what="wave 2")
        two[1].send_signal(signal.SIGKILL)
        two[1].wait(10)
        at_kill = _done(r, two_prefix, len(EVENTS))
        try:  # its peer fails without it, or is stopped as a pod would be
            two[0].wait(30)
        except subprocess.TimeoutExpired:
            two[0].kill()
            two[0].wait(10)
        rest.join(60)
        assert at_kill < total, "the kill came after the end: nothing was tested"
        two = _start(env, tmp_path, "two", 2)
        wait_for(lambda: _done(r, two_prefix, len(EVENTS)) == total, timeout=180, what="run 2")
    finally:
        _stop(two)

    s = Settings(
        data_dir=tmp_path / "reader",
        kafka_bootstrap=servers.kafka_bootstrap,
        redis_url=servers.redis_url,
        clickhouse_url=shared_stores[0],
        milvus_uri=shared_stores[1],
        encryption_key=MASTER,
    )
    stores = Stores.from_settings(s)
    stores.clickhouse.setup()
    stores.milvus.setup()
    memories = MemoryStore(stores, KeyRing.from_settings(s, stores.clickhouse))
    want = _results(stores, memories, one_prefix, base_one, r)
    got = _results(stores, memories, two_prefix, base_two, r)
    stores.close()
    assert sum(len(m) for m in want["memories"].values()) >= N_USERS * 8
    assert all(st == "done" for per in want["tasks"].values() for st, _ in per)
    assert all(want["profiles"].values())  # each user has its profile
    for key in ("memories", "changes", "tasks", "vectors", "profiles"):
        assert got[key] == want[key], key


def _commands(servers, topic: str) -> list[dict]:
    """Every command on ``topic`` so far (a fresh consumer group, from the beginning)."""
    consumer = Consumer(
        {
            "bootstrap.servers": servers.kafka_bootstrap,
            "group.id": f"read-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out, idle = [], 0
    while idle < 5:
        msg = consumer.poll(1.0)
        if msg is None:
            idle += 1
            continue
        if msg.error() is None:
            out.append(json.loads(msg.value()))
            idle = 0
    consumer.close()
    return out


def test_lifecycle_on_two_processes_acts_on_each_memory_once_per_pass(
    servers, shared_stores, tmp_path
) -> None:
    """Process 0 (2 workers) and process 1 of ``memstream dataflow lifecycle``: passes
    every 2 s from process 0 only. Every memory is decayed below the threshold (0.95, above
    any initial weight), so the first pass archives them all: each memory is in exactly
    one pass's command, archived once, and the later passes find nothing to do."""
    r = redis.Redis.from_url(servers.redis_url, decode_responses=True)
    run = uuid.uuid4().hex[:8]
    prefix, base = f"lc{run}.", 30_000_000 + (int(run, 16) % 100_000) * 100
    env = _settings(servers, shared_stores, prefix, tmp_path / "d")
    env |= {"MEMSTREAM_ARCHIVE_THRESHOLD": "0.95", "MEMSTREAM_LIFECYCLE_INTERVAL_S": "2"}
    env["MEMSTREAM_LOG_JSON"] = "true"
    ingest = _start(env, tmp_path, "ingest", 1)
    lifecycle: list[subprocess.Popen] = []
    try:
        _produce(servers, _events(prefix, base, range(2)))
        wait_for(lambda: _done(r, prefix, 2) == N_USERS * 2, timeout=180, what="ingest")
        lifecycle = _start(env, tmp_path, "lc", 2, flow="lifecycle", workers=2)

        def passes(i: int) -> int:
            text = (tmp_path / f"lc-{i}.log").read_text()
            assert "lifecycle pass failed" not in text, text[-3000:]
            return text.count('"msg": "lifecycle pass"')  # JSON lines: a failure's error too

        wait_for(lambda: passes(0) >= 3, timeout=120, interval=0.5, what="3 passes")
    finally:
        _stop(lifecycle)
        _stop(ingest)
    assert passes(1) == 0, "process 1 ran a pass"

    s = Settings(
        data_dir=tmp_path / "reader",
        kafka_bootstrap=servers.kafka_bootstrap,
        redis_url=servers.redis_url,
        clickhouse_url=shared_stores[0],
        milvus_uri=shared_stores[1],
        encryption_key=MASTER,
    )
    stores = Stores.from_settings(s)
    stores.clickhouse.setup()
    memories = MemoryStore(stores, KeyRing.from_settings(s, stores.clickhouse))
    log = ChangeLog(stores.clickhouse, memories.cipher)
    ids, archives = set(), []
    for u in range(N_USERS):
        loaded = memories.load(base + u, tenant="default")
        assert loaded and {str(m.status) for m in loaded} == {"ARCHIVED"}
        ids |= {m.memory_id for m in loaded}
        rows, _ = log.query(base + u, tenant="default", limit=1000)
        archives += [c.memory_id for c in rows if str(c.op_type) == "ARCHIVE"]
    stores.close()

    users = {base + u for u in range(N_USERS)}
    acted = [
        (c["payload"]["pass_id"], m)
        for c in _commands(servers, f"{prefix}memory.commands")
        if c["op"] == "lifecycle" and c["user_id"] in users
        for m in c["payload"]["memory_ids"]
    ]
    # each memory in one command of one pass, and archived once
    assert sorted(m for _, m in acted) == sorted(ids)
    assert len({p for p, _ in acted}) == 1
    assert sorted(archives) == sorted(ids)
