"""A flow starts on topics just created, first time: its source waits for their partitions.

Right after CreateTopics the broker answers a topic's metadata with UNKNOWN_TOPIC_OR_PART
for a while, and Bytewax's KafkaSource.list_parts raises on that; the node's flows each
failed once at start and were restarted. Real broker, no mocks.
"""

from __future__ import annotations

import logging
import threading
import time

import bytewax.operators as op
import pytest
from bytewax.connectors.kafka import KafkaSource
from bytewax.dataflow import Dataflow
from bytewax.testing import TestingSink
from confluent_kafka.admin import NewTopic

from dataflows.runner import FlowThread
from dataflows.sources import StoppableKafkaSource
from sinks.errors import TopicsNotReady
from sinks.kafka import wait_for_topics
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


def _create(stores, *topics: str) -> None:
    """Ask for the topics and return at once, as the node's ensure-topics thread does."""
    stores.kafka.admin.create_topics([NewTopic(t, 3, 1) for t in topics])


def test_wait_returns_once_fresh_topics_have_partitions(stores, unique_name) -> None:
    topics = [f"ready_{unique_name}_a", f"ready_{unique_name}_b"]
    _create(stores, *topics)
    wait_for_topics(stores.kafka.client_config(), topics, timeout=30)
    md = stores.kafka.admin.list_topics(timeout=5)
    for t in topics:
        assert md.topics[t].error is None
        assert sorted(md.topics[t].partitions) == [0, 1, 2]
    # what failed at the node's start now passes: Bytewax lists every partition
    source = KafkaSource([stores.kafka.bootstrap], topics)
    assert sorted(source.list_parts()) == sorted(f"{p}-{t}" for t in topics for p in range(3))


def test_wait_on_a_topic_that_never_appears_raises_a_clear_error(stores, unique_name) -> None:
    ready, missing = f"ready_{unique_name}", f"missing_{unique_name}"
    _create(stores, ready)
    started = time.monotonic()
    with pytest.raises(TopicsNotReady, match=rf"not ready after 2s: {missing} \(missing\)$"):
        wait_for_topics(stores.kafka.client_config(), [ready, missing], timeout=2)
    assert time.monotonic() - started < 6
    # listing all topics to wait never lets the broker auto-create the missing one
    assert missing not in stores.kafka.admin.list_topics(timeout=5).topics


def test_wait_ends_early_once_told_to_stop(stores, unique_name) -> None:
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    wait_for_topics(stores.kafka.client_config(), [f"missing_{unique_name}"], 30, stop)
    assert time.monotonic() - started < 5


def test_a_flow_on_topics_just_created_starts_without_a_restart(stores, unique_name) -> None:
    topic = f"fresh_{unique_name}"
    stop, got = threading.Event(), []

    def build() -> Dataflow:
        flow = Dataflow(f"fresh-{unique_name}")
        source = StoppableKafkaSource(brokers=[stores.kafka.bootstrap], topics=[topic], stop=stop)
        op.output(
            "out",
            op.map("value", op.input("in", flow, source), lambda m: m.value),
            TestingSink(got),
        )
        return flow

    _create(stores, topic)
    thread = FlowThread(f"fresh-{unique_name}", build, None, epoch_s=0.5, stop=stop)
    thread.start()
    try:
        stores.kafka.produce_json(topic, "1", {"n": 1})
        assert stores.kafka.flush(10) == 0
        wait_for(lambda: got, timeout=30, what="the message through the flow")
    finally:
        thread.stop()
    assert got == [b'{"n": 1}']
    assert thread.restarts == 0


def test_a_flow_whose_topic_never_appears_fails_naming_topics_not_ready(
    stores, unique_name, caplog
) -> None:
    stop = threading.Event()
    missing = f"missing_{unique_name}"

    def build() -> Dataflow:
        flow = Dataflow(f"missing-{unique_name}")
        source = StoppableKafkaSource(
            brokers=[stores.kafka.bootstrap], topics=[missing], stop=stop, ready_s=1
        )
        op.output("out", op.input("in", flow, source), TestingSink([]))
        return flow

    thread = FlowThread(f"missing-{unique_name}", build, None, epoch_s=0.5, stop=stop)
    with caplog.at_level(logging.ERROR, logger="dataflows.runner"):
        thread.start()
        try:
            wait_for(lambda: thread.restarts, timeout=15, what="the flow to fail")
        finally:
            thread.stop()
    failed = [r for r in caplog.records if r.getMessage().startswith(f"flow missing-{unique_name}")]
    assert failed and failed[0].fields["cause"] == "TopicsNotReady"
