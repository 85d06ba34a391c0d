"""The four backends answer through our own sink code (real servers, no mocks)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

from memstream.schemas.events import ALL_TOPICS
from memstream.schemas.storage import SCHEMA_VERSION

pytestmark = pytest.mark.integration


def test_topics_of_the_design_exist(stores) -> None:
    topics = stores.kafka.admin.list_topics(timeout=5).topics
    for name in ALL_TOPICS:
        assert name in topics
        assert len(topics[name].partitions) == 2
    assert stores.kafka.ensure_topics() == []  # idempotent


def test_kafka_keyed_message_round_trip(stores, unique_name) -> None:
    topic = f"t_{unique_name}"
    stores.kafka.admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(10)
    stores.kafka.produce_json(topic, "42", {"hello": "world"})
    stores.kafka.produce_json(topic, "42", {"hello": "again"})
    assert stores.kafka.flush(10) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": stores.kafka.bootstrap,
            "group.id": unique_name,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    got = []
    deadline = time.monotonic() + 15
    while len(got) < 2 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append((msg.key(), msg.partition(), msg.value()))
    consumer.close()
    assert [k for k, _, _ in got] == [b"42", b"42"]
    assert got[0][1] == got[1][1], "same key lands on one partition, in order"
    assert [v for _, _, v in got] == [b'{"hello": "world"}', b'{"hello": "again"}']


def test_redis_round_trip(stores, unique_name) -> None:
    r = stores.redis.client
    r.set(f"k:{unique_name}", "v", ex=30)
    assert r.get(f"k:{unique_name}") == "v"
    assert r.incrby(f"c:{unique_name}", 3) == 3


def test_clickhouse_schema_and_final_read(stores, user_id) -> None:
    ch = stores.clickhouse
    assert ch.schema_version() == SCHEMA_VERSION
    ch.setup()  # applying the schema twice changes nothing
    assert ch.schema_version() == SCHEMA_VERSION
    now = datetime.now(UTC)
    cols = [
        "memory_id",
        "user_id",
        "level",
        "ownership",
        "mem_type",
        "content",
        "content_hash",
        "weight",
        "weight_at",
        "status",
        "is_important",
        "recall_count",
        "created_at",
        "updated_at",
        "valid_at",
        "custom_tags",
        "vector_ref",
        "version",
    ]

    def row(status: str, version: int) -> list:
        return [
            "m1",
            user_id,
            "GLOBAL",
            "USER",
            "SEMANTIC",
            "enc",
            "h",
            0.8,
            now,
            status,
            0,
            0,
            now,
            now,
            now,
            "{}",
            "m1",
            version,
        ]

    ch.insert("memories", [row("ACTIVE", 1)], cols)
    ch.insert("memories", [row("ARCHIVED", 2)], cols)
    rows = ch.query(
        "SELECT status, version FROM memstream.memories FINAL WHERE user_id = {u:UInt64}",
        {"u": user_id},
    )
    assert rows == [("ARCHIVED", 2)]


def test_milvus_insert_and_filtered_search(stores, user_id) -> None:
    mv = stores.milvus
    dim = mv.dim
    base = dict(
        app_id="",
        session_id="",
        level="GLOBAL",
        ownership="USER",
        mem_type="SEMANTIC",
        is_important=False,
        tags={},
        valid_at=0,
        invalid_at=0,
    )
    vec = [1.0] + [0.0] * (dim - 1)
    mv.upsert(
        [
            {
                **base,
                "memory_id": f"a{user_id}",
                "user_id": str(user_id),
                "vector": vec,
                "status": "ACTIVE",
            },
            {
                **base,
                "memory_id": f"b{user_id}",
                "user_id": str(user_id),
                "vector": vec,
                "status": "ARCHIVED",
            },
            {
                **base,
                "memory_id": f"c{user_id}",
                "user_id": str(user_id + 1),
                "vector": vec,
                "status": "ACTIVE",
            },
        ]
    )
    hits = mv.search(
        [vec], f'user_id == "{user_id}" and status == "ACTIVE"', limit=10, output_fields=["status"]
    )
    assert [h["memory_id"] for h in hits[0]] == [f"a{user_id}"]
    assert hits[0][0]["distance"] == pytest.approx(1.0, abs=1e-4)
    mv.delete([f"a{user_id}", f"b{user_id}", f"c{user_id}"])
    assert mv.get([f"a{user_id}"]) == []
