"""Stop the Kafka broker in the middle of an ingest, start it again; every fact once.

The node runs on a broker and a Redis of its own (tests.helpers.private_node). While the
broker is down the node is asked to add, add_structured, recall and read a task: each
answer must be true — 0 and the write lands, or 50301 and a resend with the same
request_id after the recovery gives exactly one memory — never a 500; an add answers
50301 within the write timeout (it is accepted only once Kafka acknowledged it). The producers
(the platform's and the node's) hold what they queued until the broker is back.
"""

from __future__ import annotations

import os
import random
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest

from ops import stack
from tests.helpers.private_node import (
    _ready,
    fact,
    outage_mid_ingest,
    private_node,
    stored_counts,
)
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e


def test_kafka_stopped_mid_ingest_then_restarted_stores_every_fact_once(tmp_path) -> None:
    with private_node(tmp_path) as node:
        load, calls, users = outage_mid_ingest(node, node.kafka_down, node.kafka_up)
        counts = stored_counts(node, users)
    codes = calls.codes()
    # recall and task reads need no broker; an add is accepted only once Kafka has it, so
    # it answers 50301 within the write timeout (10 s) and its resend lands (``landed``)
    assert codes["recall"] == codes["tasks"] == 0, codes
    assert codes["add"] == 50301 and calls.add_s < 10.0 + 1.0, (codes, calls.add_s)
    facts = len(load.tasks) + 2  # + the add and the add_structured of the outage
    assert counts == dict.fromkeys(("active", "memories", "hashes", "adds", "vectors"), facts)


def test_sigkill_right_after_accepted_adds_then_restart_completes_every_task(tmp_path) -> None:
    """Each add answered accepted:true is in Kafka: after a SIGKILL of the node right
    after the answers, the task completes (or a resend of its request_id completes it)."""
    with private_node(tmp_path) as node:
        base = random.getrandbits(40) << 8

        def body(i: int) -> dict:
            turn = [{"role": "user", "content": fact(base + i, i)[0]}]
            return {"user_id": base + i, "messages": turn, "request_id": f"kill-{i}"}

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda i: node.post("add", body(i)), range(24)))
        pid = stack.proc(node.data_dir, "node").pid()
        assert pid is not None
        os.killpg(pid, signal.SIGKILL)  # right after the last accepted:true
        proc = stack.proc(node.data_dir, "node")
        wait_for(lambda: proc.pid() is None, timeout=10, what="the node to die")
        accepted = [i for i, (_, out) in enumerate(answers) if out["code"] == 0]
        assert accepted and all(answers[i][1]["data"]["accepted"] for i in accepted), answers
        stack.start_node(node.data_dir, node.env)
        wait_for(lambda: _ready(node.http), timeout=120, interval=0.3, what="the node again")

        def finished(i: int) -> bool:
            task = answers[i][1]["data"]["task_id"]
            out = node.http.get(f"/memory/v1/tasks/{task}").json()
            if out["code"] == 0 and out["data"]["status"] == "done":
                return True
            again = node.post("add", body(i))[1]  # the documented retry
            assert again["code"] in (0, 50301), again
            return False

        for i in accepted:
            wait_for(lambda i=i: finished(i), timeout=90, interval=1, what=f"task {i}")
            assert node.contents(base + i) == [("ACTIVE", fact(base + i, i)[1])]
