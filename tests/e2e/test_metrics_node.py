"""A real node (``ops.node`` as ``memstream up`` starts it, on its own Kafka and Redis):
after an add and a recall, every metric family of README "Metrics" is on its /metrics,
and the ones those calls drive have moved; ``memstream tail --user`` prints the add's
change and only that user's; Ctrl-C ends it with 0.

The node keeps 1 memory per app (``capacity_per_app``), so a second memory of an app
evicts the first, and a lifecycle pass 3 years on archives what decayed: the eviction and
lifecycle families move too. LLM errors and degrades cannot move with the rules provider
(it does not fail); tests/integration/test_consolidation.py moves them with a failing
model.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from core import metrics
from dataflows.lag import NAME as LAG
from tests.helpers.private_node import REPO, PrivateNode, private_node
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e

FAMILIES = sorted(
    {m._name for m in vars(metrics).values() if isinstance(m, MetricWrapperBase)} | {LAG}
)


def _families(node: PrivateNode) -> dict[str, list]:
    text = node.http.get("/metrics").text
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def value(fams: dict[str, list], sample: str, **labels: str) -> float:
    """The sum of the samples named ``sample`` whose labels include ``labels``."""
    family = sample.removesuffix("_total").removesuffix("_count").removesuffix("_sum")
    return sum(
        s.value
        for s in fams.get(family, [])
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
    )


# ``python -m ops.cli`` with Ctrl-C raising KeyboardInterrupt, as in a terminal. A suite
# started in the background by a shell without job control ignores SIGINT, its children
# inherit that, and Python leaves an ignored SIGINT ignored: the tail never saw the test's
# Ctrl-C (two full runs failed so). preexec_fn could reset it, but is unsafe with threads.
_CLI_WITH_CTRL_C = (
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('ops.cli', run_name='__main__', alter_sys=True)"
)


class Tail:
    """``python -m ops.cli tail`` on the node's broker, its output collected by threads."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CLI_WITH_CTRL_C, "tail", *args],
            cwd=REPO,
            env={**env, "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=lambda s=stream, i=into: i.extend(s), daemon=True).start()

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            tail_said = "".join(self.err)[-3000:]
            raise AssertionError(f"tail ignored Ctrl-C for 30 s; its stderr: {tail_said}") from None


def _same_partition(user: int) -> int:
    """Another user whose changes go to the same of 2 partitions (librdkafka's default
    partitioner: CRC-32 of the key), so they are read in the order they were written."""
    other = user + 1
    while zlib.crc32(str(other).encode()) % 2 != zlib.crc32(str(user).encode()) % 2:
        other += 1
    return other


def _lag_polled(fams) -> bool:
    """The lag gauge holds every partition the test reads (it is set by a poller)."""
    got = {(s.labels["flow"], s.labels["topic"], s.labels["partition"]) for s in fams.get(LAG, [])}
    need = {("ingest", t, p) for t in ("memory.conversations", "memory.commands") for p in "01"}
    return need | {("lifecycle", "memory.recall_hits", p) for p in "01"} <= got


def test_every_family_is_served_and_moves_and_tail_follows_a_user(tmp_path: Path) -> None:
    with private_node(tmp_path, {"MEMSTREAM_CAPACITY_PER_APP": "1"}) as node:
        user = 7_000_001
        other = _same_partition(user)
        tail = Tail({**node.env, "MEMSTREAM_DATA_DIR": str(tmp_path / "tail")}, "--user", str(user))
        try:
            wait_for(lambda: any("following" in x for x in tail.err), 60, what=f"tail {tail.err}")
            status, out = node.post(
                "add_structured", {"user_id": other, "content": "I own a red kayak"}
            )
            assert status == 200 and out["code"] == 0, out
            status, out = node.post(
                "add",
                {
                    "user_id": user,
                    "app_id": "chat",
                    "messages": [
                        {"role": "user", "content": "I am allergic to peanuts.", "msg_id": "m1"}
                    ],
                },
            )
            assert status == 200 and out["code"] == 0, out
            task = out["data"]["task_id"]
            wait_for(
                lambda: (
                    node.http.get(f"/memory/v1/tasks/{task}").json()["data"]["status"] == "done"
                ),
                60,
                what="the add done",
            )
            status, out = node.post(
                "recall",
                {
                    "user_id": user,
                    "query": "what food should I avoid?",
                    "scope": {"app_id": "chat"},
                },
            )
            assert status == 200 and out["data"]["hit"], out
            wait_for(lambda: tail.out, 30, what="tail printing the add's change")
        finally:
            code = tail.interrupt()
        assert code == 0, tail.err
        changes = [json.loads(line) for line in tail.out]
        assert changes and {c["user_id"] for c in changes} == {user}, changes
        assert any(c["op"] == "ADD" for c in changes)

        # a second memory of one app evicts the first (capacity 1); years on, the rest decays
        for text in ("My locker code is 4711", "I collect Brazilian stamps"):
            status, out = node.post(
                "add_structured", {"user_id": other, "app_id": "box", "content": text}
            )
            assert status == 200 and out["code"] == 0, out
        assert out["data"]["evicted"] == 1, out
        later = (datetime.now(UTC) + timedelta(days=3 * 365)).isoformat()
        resp = node.http.post(
            "/admin/v1/lifecycle/run", json={"now": later, "users": [user, other]}
        )
        assert resp.status_code == 200 and resp.json()["code"] == 0, resp.text

        fams = wait_for(
            lambda: (
                (f := _families(node))
                and value(f, "memstream_dataflow_events_total", outcome="out") >= 2
                and _lag_polled(f)  # the lag gauge fills on a schedule of its own (dataflows.lag)
                and f
            ),
            30,
            what="the ingest flow's counts",
        )
        missing = [name for name in FAMILIES if name not in fams]
        assert not missing, missing

        recall = {"route": "/memory/v1/recall", "code": "200"}
        moved = {
            "http requests": value(fams, "memstream_http_requests_total", **recall),
            "http latency": value(fams, "memstream_http_request_seconds_count", **recall),
            "recall embed": value(fams, "memstream_recall_stage_seconds_count", stage="embed"),
            "recall search": value(fams, "memstream_recall_stage_seconds_count", stage="search"),
            "recall rank": value(fams, "memstream_recall_stage_seconds_count", stage="rank"),
            "query cache": value(fams, "memstream_query_embedding_cache_total"),
            "hot lookups": value(fams, "memstream_hot_cache_lookups_total", result="hit"),
            "hot loads": value(fams, "memstream_hot_cache_loads_total"),
            "flow in": value(fams, "memstream_dataflow_events_total", flow="ingest", outcome="in"),
            "flow out": value(
                fams, "memstream_dataflow_events_total", flow="ingest", outcome="out"
            ),
            "batch in": value(
                fams, "memstream_dataflow_batch_size_count", flow="ingest", step="in"
            ),
            "batch sink": value(
                fams, "memstream_dataflow_batch_size_count", flow="ingest", step="sink"
            ),
            "freshness": value(fams, "memstream_dataflow_freshness_seconds_count", flow="ingest"),
            "llm calls": value(
                fams, "memstream_llm_calls_total", provider="rules", task="extract", outcome="ok"
            ),
            "llm latency": value(fams, "memstream_llm_call_seconds_count", task="extract"),
            "evictions": value(fams, "memstream_memory_evictions_total"),
            "lifecycle": value(fams, "memstream_lifecycle_actions_total", action="decayed"),
            "dependency up": value(fams, "memstream_dependency_up", dependency="kafka"),
        }
        assert all(v > 0 for v in moved.values()), moved
        assert value(fams, "memstream_recall_breaker_state") == 0  # closed
        lag = {
            (s.labels["flow"], s.labels["topic"], s.labels["partition"]): s.value for s in fams[LAG]
        }
        for topic in ("memory.conversations", "memory.commands"):
            assert {("ingest", topic, "0"), ("ingest", topic, "1")} <= set(lag), lag
        assert {("lifecycle", "memory.recall_hits", p) for p in "01"} <= set(lag), lag
        assert all(v >= 0 for v in lag.values())
