"""A real node on its own Kafka broker and Redis, for fault tests that stop those servers.

Started as ``ops.bench.soak`` does it: Kafka and Redis on free ports in a temporary data
dir (ops.stack), the node as a subprocess (``ops.stack.start_node``) on the same dir, so
stopping a server never touches the session's shared ones. ``Load`` produces one
distinct fact per event straight to ``memory.conversations`` (as a chat platform would)
and counts the tasks that are done; ``stored_counts`` reads the stores once the node has
stopped (chDB and Milvus Lite lock their dir while it runs). ``outage_mid_ingest`` is
the scenario of the fault tests (tests/e2e/test_outage_*.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from ops import stack
from ops.procs import free_port
from tests.helpers.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
TOPIC = "memory.conversations"
# librdkafka reports a stopped broker on stderr at each reconnect: to logging instead
QUIET = {"logger": logging.getLogger("tests.kafka")}


@dataclass
class PrivateNode:
    data_dir: Path
    bootstrap: str
    controller_port: int
    redis_url: str
    env: dict[str, str]
    http: httpx.Client

    def kafka_down(self) -> None:
        assert stack.proc(self.data_dir, "kafka").stop(), "the broker was not running"

    def kafka_up(self) -> None:  # same port, same storage: the topics and offsets are kept
        stack.start_kafka(
            self.data_dir, self.bootstrap, partitions=2, controller_port=self.controller_port
        )

    def redis_down(self) -> None:
        assert stack.proc(self.data_dir, "redis").stop(), "redis was not running"

    def redis_up(self) -> None:  # same port, same append-only file: the keys are kept
        stack.start_redis(self.data_dir, self.redis_url)

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, decode_responses=True, socket_timeout=2)

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        resp = self.http.post(f"/memory/v1/{path}", json=body)
        return resp.status_code, resp.json()

    def contents(self, user_id: int) -> list[tuple[str, str]]:
        """(status, content) of every memory of the user, deleted ones included."""
        status, out = self.post(
            "user/list", {"user_id": user_id, "include_deleted": True, "page_size": 1000}
        )
        assert status == 200 and out["code"] == 0, out
        grouped = out["data"]["memories"]
        rows = list(grouped["GLOBAL"])
        for part in ("APP", "SESSION"):
            for items in grouped[part].values():
                rows.extend(items)
        return [(m["status"], m["content"]) for m in rows]


@contextlib.contextmanager
def private_node(tmp_path: Path, extra_env: dict[str, str] | None = None) -> Iterator[PrivateNode]:
    """Kafka, Redis and a node of their own (``extra_env``: more MEMSTREAM_* settings);
    every process is stopped on the way out."""
    data_dir = tmp_path / "stack"
    bootstrap = f"127.0.0.1:{free_port()}"
    controller_port = free_port()
    redis_url = f"redis://127.0.0.1:{free_port()}/0"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env |= {
        "MEMSTREAM_API_PORT": str(port),
        "MEMSTREAM_KAFKA_BOOTSTRAP": bootstrap,
        "MEMSTREAM_KAFKA_PARTITIONS": "2",
        "MEMSTREAM_REDIS_URL": redis_url,
        "MEMSTREAM_LOG_LEVEL": "WARNING",
        **(extra_env or {}),
    }
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
    try:
        stack.start_redis(data_dir, redis_url)
        stack.start_kafka(data_dir, bootstrap, partitions=2, controller_port=controller_port)
        stack.start_node(data_dir, env)
        node = PrivateNode(data_dir, bootstrap, controller_port, redis_url, env, http)
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        wait_for(
            lambda: TOPIC in admin.list_topics(timeout=5).topics and _ready(http),
            timeout=120,
            interval=0.3,
            what=f"the node ready ({stack.proc(data_dir, 'node').tail(5)})",
        )
        yield node
    finally:
        http.close()
        stack.stop(data_dir)


def _ready(http: httpx.Client) -> bool:
    try:
        return http.get("/readyz").status_code == 200
    except httpx.HTTPError:
        return False


def fact(user_id: int, i: int) -> tuple[str, str]:
    """The i-th message of a user and the memory the rules extract from it."""
    code = f"{user_id % 100_000:05d}{i:03d}"
    return f"My locker code is {code}.", f"User's locker code is {code}"


@dataclass
class Load:
    """users × per_user events, one distinct fact each, produced to memory.conversations."""

    node: PrivateNode
    users: list[int]
    per_user: int
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def __post_init__(self) -> None:
        # the default delivery timeout (300 s) outlasts any outage of these tests
        self.producer = Producer(
            {"bootstrap.servers": self.node.bootstrap, "linger.ms": 5, **QUIET}
        )
        self.events = [(u, i) for i in range(self.per_user) for u in self.users]
        self.failed_deliveries: list[str] = []

    def task(self, user_id: int, i: int) -> str:
        return f"outage-{self.run}-{user_id}-{i}"

    @property
    def tasks(self) -> list[str]:
        return [self.task(u, i) for u, i in self.events]

    def produce(self, events: list[tuple[int, int]], per_s: float) -> None:
        def delivered(err, _msg) -> None:
            if err is not None:
                self.failed_deliveries.append(str(err))

        for u, i in events:
            value = {
                "task_id": self.task(u, i),
                "user_id": u,
                "messages": [{"role": "user", "content": fact(u, i)[0], "msg_id": f"m{i}"}],
            }
            self.producer.produce(
                TOPIC, key=str(u).encode(), value=json.dumps(value).encode(), on_delivery=delivered
            )
            self.producer.poll(0)
            time.sleep(1 / per_s)

    def produce_in_background(
        self, events: list[tuple[int, int]], per_s: float
    ) -> threading.Thread:
        thread = threading.Thread(target=self.produce, args=(events, per_s), daemon=True)
        thread.start()
        return thread

    def flush(self, timeout: float = 120) -> None:
        assert self.producer.flush(timeout) == 0, "events still undelivered"
        assert not self.failed_deliveries, self.failed_deliveries

    def statuses(self) -> list[str | None]:
        """The status of every task; None where Redis cannot say (down or unknown)."""
        try:
            pipe = self.node.redis().pipeline()
            for t in self.tasks:
                pipe.hget(f"task:{t}", "status")
            return pipe.execute()
        except redis.RedisError:
            return [None] * len(self.events)

    def done(self) -> int:
        return sum(1 for s in self.statuses() if s == "done")

    def expected(self, user_id: int) -> list[str]:
        return [fact(user_id, i)[1] for i in range(self.per_user)]


COUNT_SCRIPT = """
import json, sys
from core.settings import load_settings
from sinks.stores import Stores
s = load_settings()
st = Stores.from_settings(s); st.clickhouse.setup(); st.milvus.setup()
users = [int(u) for u in sys.argv[1:]]
q = lambda sql: st.clickhouse.query(sql, {"u": users})
# the users' own memories; their stored profiles apart (docs/architecture.md#the-profile)
where = "user_id IN {u:Array(UInt64)} AND NOT startsWith(memory_id, 'p_')"
vectors = st.milvus.query('user_id in ' + json.dumps([str(u) for u in users]), ["memory_id"],
                          limit=16384)
print(json.dumps({
  "active": q(f"SELECT count() FROM memstream.memories FINAL WHERE {where} AND status = 'ACTIVE'")[0][0],
  "memories": q(f"SELECT count() FROM memstream.memories FINAL WHERE {where}")[0][0],
  "hashes": q(f"SELECT uniqExact(user_id, content_hash) FROM memstream.memories FINAL WHERE {where}")[0][0],
  "adds": q(f"SELECT count() FROM memstream.memory_changelog FINAL WHERE {where} AND op_type = 'ADD'")[0][0],
  "vectors": len({v["memory_id"] for v in vectors}),
}))
"""


def stored_counts(node: PrivateNode, users: list[int]) -> dict[str, int]:
    """Counts straight from ClickHouse and Milvus; call after the node has stopped."""
    stack.proc(node.data_dir, "node").stop()
    env = {**node.env, "MEMSTREAM_DATA_DIR": str(node.data_dir)}
    out = subprocess.run(
        [sys.executable, "-c", COUNT_SCRIPT, *map(str, users)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@dataclass
class OutageCalls:
    """The HTTP calls made to the node while a server is down, and what they must mean.

    add answers once Kafka acknowledged its event (or 50301 within the write timeout),
    recall and a task read at once; add_structured waits for the
    writer's answer in a thread (so the server may come back meanwhile). ``check`` says
    every answer was true: no 500, 0 or 50301 only, and (``landed``) each write answered
    0 is stored once, each answered 50301 is stored once after a resend of its request_id.
    """

    node: PrivateNode
    caller: int  # a user of its own: only these calls write its memories
    probe_user: int  # the user recall asks about
    task_id: str  # a task to read
    answers: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    add_s: float = 0.0  # how long the add took to answer

    ADD_FACT = ("I was born in Lisbon.", "User was born in Lisbon")
    STRUCTURED = "My passport expires in May 2031"

    @property
    def add_body(self) -> dict[str, Any]:
        turns = [{"role": "user", "content": self.ADD_FACT[0]}]
        return {"user_id": self.caller, "messages": turns, "request_id": "add-during-outage"}

    @property
    def structured_body(self) -> dict[str, Any]:
        return {"user_id": self.caller, "content": self.STRUCTURED, "request_id": "st-outage"}

    def start(self) -> None:
        self._waiting = threading.Thread(
            target=lambda: self.answers.update(
                add_structured=self.node.post("add_structured", self.structured_body)
            )
        )
        self._waiting.start()
        started = time.monotonic()
        self.answers["add"] = self.node.post("add", self.add_body)
        self.add_s = time.monotonic() - started  # 50301 within the write timeout
        recall = {"user_id": self.probe_user, "query": "locker code", "top_k": 5}
        self.answers["recall"] = self.node.post("recall", recall)
        read = self.node.http.get(f"/memory/v1/tasks/{self.task_id}")
        self.answers["tasks"] = (read.status_code, read.json())

    def codes(self) -> dict[str, int]:
        """Once the server is back: the envelope code of each call, each checked true."""
        self._waiting.join(60)
        for path, (status, out) in self.answers.items():
            assert status != 500 and out["code"] in (0, 50301), (path, status, out)
        return {path: out["code"] for path, (_, out) in self.answers.items()}

    def landed(self, probe_expected: list[str]) -> None:
        """Once the server is back and the load done: every answer held."""
        _, recalled = self.answers["recall"]
        if recalled["code"] == 0:  # what it gave during the outage is what is stored
            got = {m["content"] for m in recalled["data"]["memories"]}
            assert got <= set(probe_expected), got
        _, out = self.answers["add"]
        if out["code"] != 0:
            _, out = self.node.post("add", self.add_body)
            assert out["code"] == 0, out
        task_id = out["data"]["task_id"]
        finished = wait_for(
            lambda: (
                (r := self.node.http.get(f"/memory/v1/tasks/{task_id}").json())["code"] == 0
                and r["data"]["status"] in ("done", "failed")
                and r["data"]
            ),
            timeout=60,
            interval=0.3,
            what="the add made during the outage",
        )
        assert finished["status"] == "done" and finished["counts"]["added"] == 1, finished
        _, out = self.answers["add_structured"]
        if out["code"] != 0:
            wait_for(
                lambda: self.node.post("add_structured", self.structured_body)[1]["code"] == 0,
                timeout=60,
                interval=1,
                what="the resent add_structured",
            )
        mine = sorted(self.node.contents(self.caller))
        assert mine == sorted([("ACTIVE", self.ADD_FACT[1]), ("ACTIVE", self.STRUCTURED)]), mine


def check_every_fact_once(load: Load) -> None:
    """Each user holds exactly its facts, ACTIVE, and each task says it added one."""
    wait_for(lambda: load.done() == len(load.tasks), timeout=120, interval=0.5, what="all done")
    for u in load.users:
        contents = load.node.contents(u)
        assert sorted(c for _, c in contents) == sorted(load.expected(u)), u
        assert {s for s, _ in contents} == {"ACTIVE"}, contents
    pipe = load.node.redis().pipeline()
    for t in load.tasks:
        pipe.hget(f"task:{t}", "counts")
    added = [json.loads(c)["added"] for c in pipe.execute()]
    assert added == [1] * len(load.tasks), added


def outage_mid_ingest(
    node: PrivateNode,
    down: Callable[[], None],
    up: Callable[[], None],
    outage_s: float = 10.0,
    n_users: int = 3,
    per_user: int = 40,
    first_wave: int = 10,
) -> tuple[Load, OutageCalls, list[int]]:
    """Ingest a first wave; stop a server (``down``) while the rest streams in; call the
    node meanwhile; start it again (``up``) after ``outage_s``; check every fact stored
    once and every answer true. Returns the load, the calls (their ``codes``) and every
    user."""
    base = random.getrandbits(40) << 8
    load = Load(node, [base + u for u in range(n_users)], per_user)
    first = [(u, i) for u, i in load.events if i < first_wave]
    load.produce(first, per_s=500)
    wait_for(lambda: load.done() >= len(first), timeout=60, what="the first wave")
    rest = load.produce_in_background(load.events[len(first) :], per_s=60)
    time.sleep(0.5)  # a part of the rest is in the node, a part still to come
    done_before = load.done()
    down()
    down_at = time.monotonic()
    assert done_before < len(load.tasks), "the outage came too late to test anything"
    calls = OutageCalls(node, caller=base + n_users, probe_user=base, task_id=load.tasks[0])
    calls.start()
    time.sleep(max(0.0, outage_s - (time.monotonic() - down_at)))
    up()
    calls.codes()
    rest.join(60)
    load.flush()
    check_every_fact_once(load)
    calls.landed(load.expected(base))
    return load, calls, [*load.users, calls.caller]
