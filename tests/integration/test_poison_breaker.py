"""No record stops the flow (docs/operations.md#poison-records), through real Kafka.

A test double stands in for one store part and fails on one user's data: in the sink
(task status) the write is bisected; in a step no guard covers (the switch check) the
flow fails, and the breaker replays in-flight records one at a time and dead-letters
the one that fails alone. The same double failing as infrastructure dead-letters nothing.
"""

from __future__ import annotations

import dataclasses
import json
import random
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from dataflows.breaker import Breaker
from dataflows.ingest.flow import build_flow
from dataflows.ingest.sink import dead_letter_messages
from dataflows.runner import FlowThread
from memstream.schemas.tenants import UserKey
from sinks.errors import StoreUnavailable
from sinks.kafka import KafkaBus
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


class PoisonTasks:
    """The task store, except that a result of a ``POISON`` task cannot be written (as a
    lone surrogate in an id broke redis-py's command packing)."""

    def __init__(self, inner):
        self._inner = inner

    def finish(self, results) -> None:
        if any("POISON" in r.task_id for r in results):
            raise UnicodeEncodeError("utf-8", "\ud83d", 0, 1, "surrogates not allowed")
        self._inner.finish(results)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class PoisonSwitches:
    """The switch store, failing for ``poison``'s user: with a data error, or (``infra``)
    as a store that did not answer, ``infra`` times and then no more."""

    def __init__(self, inner, poison: int, infra: int = 0):
        self._inner = inner
        self.poison = poison
        self.infra = infra
        self.calls = 0

    def get_many(self, keys: list[UserKey]):
        if any(k.user_id == self.poison for k in keys):
            self.calls += 1
            if not self.infra:
                raise ValueError("a value no check foresaw")
            if self.calls <= self.infra:
                raise StoreUnavailable("redis: timed out (injected)")
        return self._inner.get_many(keys)

    def __getattr__(self, name):
        return getattr(self._inner, name)


@dataclasses.dataclass
class Private:
    rt: object
    prefix: str
    bootstrap: str

    def topic(self, base: str) -> str:
        return f"{self.prefix}{base}"


@pytest.fixture
def private(settings, stores, runtime) -> Iterator[Private]:
    """The session's stores on topics of its own (no other flow reads them)."""
    prefix = f"poison{random.getrandbits(32):08x}."
    own = dataclasses.replace(
        stores,
        kafka=KafkaBus(settings.kafka_bootstrap, settings.kafka_partitions, 1, 3_600_000, prefix),
    )
    own.kafka.setup()
    own.kafka.ensure_topics()
    rt = dataclasses.replace(
        runtime,
        settings=runtime.settings.model_copy(update={"kafka_topic_prefix": prefix}),
        stores=own,
        stop=threading.Event(),
    )
    yield Private(rt, prefix, settings.kafka_bootstrap)
    rt.stop.set()


def _run(rt, data_dir: Path | None, breaker: Breaker | None) -> FlowThread:
    thread = FlowThread(
        f"ingest-poison-{uuid.uuid4().hex[:6]}",
        lambda: build_flow(rt, breaker=breaker),
        data_dir,
        epoch_s=0.5,
        stop=rt.stop,
        on_failure=rt.cache.clear,
        breaker=breaker,
        dead_letter=(lambda msgs, reason: dead_letter_messages(rt, msgs, reason)),
    )
    thread.flow_name = "ingest-poison"  # one recovery dir across the two runs below
    thread.start()
    return thread


def _produce(p: Private, events: list[dict]) -> None:
    producer = Producer({"bootstrap.servers": p.bootstrap})
    for e in events:
        producer.produce(
            p.topic("memory.conversations"), key=str(e["user_id"]).encode(), value=json.dumps(e)
        )
    assert producer.flush(20) == 0


def _event(user_id: int, task_id: str, text: str) -> dict:
    return {
        "task_id": task_id,
        "user_id": user_id,
        "app_id": "poison",
        "messages": [{"role": "user", "content": text, "msg_id": f"{task_id}-m"}],
    }


def _dlq(p: Private, marker: str, settle_s: float = 2.0) -> list:
    """The DLQ records of this test's topics whose value carries ``marker``."""
    consumer = Consumer({"bootstrap.servers": p.bootstrap, "group.id": f"t-{uuid.uuid4()}"})
    topic = p.topic("memory.dlq")
    consumer.assign([TopicPartition(topic, i, 0) for i in range(2)])
    found, quiet_until = [], time.monotonic() + settle_s
    while time.monotonic() < quiet_until:
        msg = consumer.poll(0.3)
        if msg is not None and not msg.error() and marker.encode() in (msg.value() or b""):
            found.append(msg)
    consumer.close()
    return found


def _done(rt, task_id: str) -> bool:
    state = rt.tasks.get(task_id, tenant="default")
    return bool(state) and state["status"] == "done"


def _reason(msg) -> str:
    return dict(msg.headers())["error"].decode()


def test_a_sink_write_that_fails_for_one_record_dead_letters_it_alone(private, user_id) -> None:
    rt = dataclasses.replace(private.rt, tasks=PoisonTasks(private.rt.tasks))
    thread = _run(rt, None, Breaker("ingest"))
    try:
        marker = uuid.uuid4().hex
        good = [_event(user_id + i, f"good-{marker}-{i}", f"I live in town {i}.") for i in range(4)]
        poison = _event(user_id + 9, f"POISON-{marker}", f"I keep bees. {marker}")
        _produce(private, [good[0], good[1], poison, good[2], good[3]])
        for e in good:
            wait_for(lambda e=e: _done(rt, e["task_id"]), 60, what=f"{e['task_id']} stored")
        dead = _dlq(private, marker)
        assert len(dead) == 1, "the poison record goes to the DLQ once"
        reason = _reason(dead[0])
        assert reason.startswith("sink failed on this input: UnicodeEncodeError")
        # its memories were durable before its status broke: the reason does not deny it
        assert "its memories were stored" in reason
        assert rt.memories.ids(user_id + 9, tenant="default")
        assert thread.restarts == 0, "the flow never stopped"
    finally:
        rt.stop.set()
        thread.join(30)


def test_a_step_that_fails_on_one_record_trips_the_breaker_after_two_failures(
    private, user_id, tmp_path
) -> None:
    poison_user = user_id + 9
    switches = PoisonSwitches(private.rt.switches, poison_user)
    rt = dataclasses.replace(private.rt, switches=switches)
    breaker = Breaker("ingest")
    thread = _run(rt, tmp_path, breaker)
    marker = uuid.uuid4().hex
    good = [_event(user_id + i, f"good-{marker}-{i}", f"I live in town {i}.") for i in range(3)]
    poison = _event(poison_user, f"bad-{marker}", f"I keep bees. {marker}")
    try:
        thread.running.wait(30)
        _produce(private, [good[0], poison, good[1], good[2]])
        for e in good:
            wait_for(lambda e=e: _done(rt, e["task_id"]), 120, what=f"{e['task_id']} stored")
        wait_for(lambda: breaker.blamed == 1, 60, what="the breaker blamed one record")
        dead = _dlq(private, marker)
        assert len(dead) == 1
        assert "the flow failed on this record alone" in _reason(dead[0])
        assert "ValueError" in _reason(dead[0])
        assert thread.restarts >= 3  # two to trip it, one in the careful replay
    finally:
        rt.stop.set()
        thread.join(30)

    # a new process on the same recovery store: the record does not come back
    rt2 = dataclasses.replace(rt, stop=threading.Event())
    again = _run(rt2, tmp_path, Breaker("ingest"))
    try:
        later = _event(user_id + 5, f"later-{marker}", "I play the cello.")
        _produce(private, [later])
        wait_for(lambda: _done(rt2, later["task_id"]), 60, what="a later add stored")
        assert again.restarts == 0
        assert len(_dlq(private, marker)) == 1, "dead-lettered once, not again"
        assert switches.calls >= 3
    finally:
        rt2.stop.set()
        again.join(30)


def test_an_infrastructure_error_dead_letters_nothing(private, user_id) -> None:
    poison_user = user_id + 9
    rt = dataclasses.replace(
        private.rt, switches=PoisonSwitches(private.rt.switches, poison_user, infra=3)
    )
    breaker = Breaker("ingest")
    thread = _run(rt, None, breaker)
    marker = uuid.uuid4().hex
    try:
        thread.running.wait(30)
        slow = _event(poison_user, f"slow-{marker}", f"I keep bees. {marker}")
        good = _event(user_id, f"good-{marker}", "I live in Lyon.")
        _produce(private, [good, slow])
        wait_for(lambda: _done(rt, slow["task_id"]), 90, what="stored once the store answers")
        # the two users may sit on different partitions, and each restart replays both from
        # the start (no recovery here): the good task may finish an epoch after the slow one
        wait_for(lambda: _done(rt, good["task_id"]), 30, what="the other user's task stored")
        assert thread.restarts >= 3
        assert breaker.blamed == 0 and not breaker.skip
        assert _dlq(private, marker, settle_s=1.0) == []
    finally:
        rt.stop.set()
        thread.join(30)


def _dlq_cli(p: Private, tmp_path: Path, *args: str) -> dict:
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "MEMSTREAM_KAFKA_BOOTSTRAP": p.bootstrap,
        "MEMSTREAM_KAFKA_TOPIC_PREFIX": p.prefix,
        "MEMSTREAM_DATA_DIR": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-m", "ops.cli", "dlq", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_dlq_replay_redrives_after_a_fix_and_never_loops(private, user_id, tmp_path) -> None:
    broken = dataclasses.replace(private.rt, tasks=PoisonTasks(private.rt.tasks))
    thread = _run(broken, None, Breaker("ingest"))
    marker = uuid.uuid4().hex
    fixed_later = _event(user_id, f"POISON-{marker}-a", f"I keep bees. {marker}")
    try:
        _produce(private, [fixed_later])
        wait_for(lambda: len(_dlq(private, marker, 0.5)) == 1, 60, what="dead-lettered")
        # still broken: the replayed record fails again and goes back to the DLQ once
        assert _dlq_cli(private, tmp_path, "replay", "--reason", "sink failed")["redriven"] == 1
        wait_for(lambda: len(_dlq(private, marker, 0.5)) == 2, 60, what="failed again")
        again = [m for m in _dlq(private, marker) if "replay_of" in dict(m.headers())]
        assert len(again) == 1
        listed = _dlq_cli(private, tmp_path, "list", "--reason", "sink failed", "--limit", "1")
        assert listed["error"].startswith("sink failed") and "bytes" in listed
    finally:
        private.rt.stop.set()
        thread.join(30)

    # the cause fixed (the ordinary task store): a replay stores it; the copy that failed
    # after a replay is passed over, so nothing loops
    fixed = dataclasses.replace(private.rt, stop=threading.Event())
    thread = _run(fixed, None, Breaker("ingest"))
    try:
        result = _dlq_cli(private, tmp_path, "replay", "--reason", "sink failed")
        assert result["redriven"] == 1 and result["skipped_replayed"] == 1
        wait_for(lambda: _done(fixed, fixed_later["task_id"]), 60, what="stored after the fix")
        assert fixed.memories.ids(user_id, tenant="default")
        time.sleep(2)
        assert len(_dlq(private, marker)) == 2, "nothing failed again"
    finally:
        fixed.stop.set()
        thread.join(30)
