"""Kafka consumer lag per topic-partition (dataflows.lag) on the session's real broker: a
flow that reads everything has lag 0, a stopped one falls behind by exactly what was
produced meanwhile, and once restarted from its recovery store it catches up to 0."""

from __future__ import annotations

import logging
import threading
import uuid

import bytewax.operators as op
import pytest
from bytewax.dataflow import Dataflow
from bytewax.testing import TestingSink
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client import REGISTRY

from dataflows.lag import LAG, NAME
from dataflows.runner import FlowThread
from dataflows.sources import StoppableKafkaSource
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


def _lag(flow_id: str) -> dict[tuple[str, str], float]:
    """The flow's lag samples as /metrics shows them, keyed by (topic, partition)."""
    return {
        (s.labels["topic"], s.labels["partition"]): s.value
        for family in REGISTRY.collect()
        if family.name == NAME
        for s in family.samples
        if s.labels["flow"] == flow_id
    }


def test_lag_grows_while_the_flow_is_stopped_and_is_0_once_it_caught_up(servers, tmp_path):
    bootstrap = servers.kafka_bootstrap
    topic = f"lag-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a freed client fails its futures
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "logger": logging.getLogger("tests.kafka")}
    )
    flow_id = f"lag_{uuid.uuid4().hex[:8]}"
    seen: list[bytes] = []

    def produce(first: int, n: int) -> None:
        for i in range(first, first + n):
            producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
        assert producer.flush(30) == 0

    def run() -> FlowThread:
        stop = threading.Event()

        def build() -> Dataflow:
            flow = Dataflow(flow_id)
            src = StoppableKafkaSource([bootstrap], [topic], stop=stop, tail=True)
            values = op.map("value", op.input("in", flow, src), lambda m: m.value)
            op.output("out", values, TestingSink(seen))
            return flow

        thread = FlowThread(flow_id, build, tmp_path, epoch_s=0.2, stop=stop)
        thread.start()
        return thread

    produce(0, 5)
    first = run()
    wait_for(lambda: len(set(seen)) == 5, 60, what="the flow read the first 5")
    wait_for(
        lambda: (lag := _lag(flow_id)) and len(lag) == 2 and sum(lag.values()) == 0,
        30,
        what="lag 0 on both partitions",
    )
    assert set(_lag(flow_id)) == {(topic, "0"), (topic, "1")}

    first.stop()
    assert not first.is_alive()
    produce(5, 7)
    wait_for(lambda: sum(_lag(flow_id).values()) == 7, 30, what="lag 7 while stopped")
    assert len(set(seen)) == 5  # nothing read meanwhile: the lag is what waits

    second = run()  # resumes from the recovery store in tmp_path
    try:
        wait_for(lambda: len(set(seen)) == 12, 60, what="the restarted flow read the rest")
        wait_for(lambda: sum(_lag(flow_id).values()) == 0, 30, what="lag back to 0")
    finally:
        second.stop()
        LAG.forget(flow_id)  # later scrapes of this session need not ask about this topic
    assert set(seen) == {f"v{i}".encode() for i in range(12)}
