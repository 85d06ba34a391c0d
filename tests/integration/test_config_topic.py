"""memory.config on the session's Kafka: publish, read back, and a follower that swaps
live settings into its holders (a topic prefix per test keeps tests apart)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigResource, ResourceType

from core.live_config import ConfigKey, ConfigRecord
from core.settings import Settings
from memstream.schemas.events import TOPIC_CONFIG
from sinks.config_topic import ConfigFollower, ensure_config_topic, fold, publish, read_all
from sinks.kafka import KafkaBus
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


@dataclass
class Holder:
    settings: Settings


@pytest.fixture
def bus(settings):
    prefix = f"cfg{uuid.uuid4().hex[:8]}."
    b = KafkaBus.from_settings(settings.model_copy(update={"kafka_topic_prefix": prefix}))
    b.setup()
    yield b
    b.close()


def rec(name: str, value, app: str | None = None) -> ConfigRecord:
    return ConfigRecord(ConfigKey(name, app), value, "tester@here", "2026-12-01T00:00:00Z")


def _cleanup_policy(bus: KafkaBus) -> str | None:
    res = ConfigResource(ResourceType.TOPIC, bus.topic(TOPIC_CONFIG))
    try:  # right after CreateTopics the broker may not know the topic yet
        return bus.admin.describe_configs([res])[res].result(10)["cleanup.policy"].value
    except KafkaException:
        return None


def test_the_topic_is_compacted_and_reads_back_in_order(bus: KafkaBus) -> None:
    assert read_all(bus, 10) == []  # no topic yet: nothing live (and none auto-created)
    assert bus.topic(TOPIC_CONFIG) not in bus.admin.list_topics(timeout=5).topics
    ensure_config_topic(bus)
    ensure_config_topic(bus)  # idempotent
    assert wait_for(lambda: _cleanup_policy(bus), 20, 0.2, "the topic's configs") == "compact"
    publish(bus, rec("min_relevance", 0.5, "app_a"))
    publish(bus, rec("min_relevance", 0.6, "app_a"))
    raw = read_all(bus, 10)
    assert [json.loads(v)["value"] for _, v in raw] == [0.5, 0.6]
    state, _ = fold(Settings(), raw)
    assert state.current.for_app("app_a").min_relevance == 0.6


def test_a_follower_applies_changes_to_its_holders_and_ignores_bad_records(
    bus: KafkaBus, settings
) -> None:
    ensure_config_topic(bus)
    publish(bus, rec("capacity_total", 1500))  # before the follower: read from the start
    rt, svc = Holder(settings), Holder(settings)
    follower = ConfigFollower(bus, settings, poll_s=0.05).attach(rt).start()
    try:
        assert follower.ready.wait(20)
        assert rt.settings.capacity_total == 1500
        follower.attach(svc)  # a holder attached later gets the current values at once
        assert svc.settings is rt.settings

        publish(bus, rec("min_relevance", 0.8, "app_a"))
        wait_for(lambda: rt.settings.for_app("app_a").min_relevance == 0.8, 5, 0.05, "live")
        assert svc.settings is rt.settings and rt.settings.min_relevance == 0.3

        before = rt.settings
        for bad in (
            rec("min_relevance", 7, "app_a"),
            rec("min_relevance", "abc"),
            rec("kafka_bootstrap", "10.0.0.1:9092"),
        ):
            publish(bus, bad)
        bus.produce_json(bus.topic(TOPIC_CONFIG), "min_relevance", b"not json")
        bus.flush(10)
        wait_for(lambda: follower.refused == 4, 5, 0.05, "the four refusals")
        assert rt.settings is before  # nothing changed

        publish(bus, rec("min_relevance", None, "app_a"))  # unset
        wait_for(lambda: rt.settings.for_app("app_a").min_relevance == 0.3, 5, 0.05, "unset")
        assert rt.settings.capacity_total == 1500
        assert follower.applied == 3
    finally:
        follower.stop()
    assert settings.capacity_total == 2000  # the start-time object is never touched
