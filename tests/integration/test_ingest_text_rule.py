"""The text rule at the Kafka edge (docs/api.md#text), through the session's real Kafka:
a lone surrogate or NUL in any string field, or a control character in an id, sends the
record to memory.dlq once, with a reason naming the field, and nothing stops: another
tenant's add is recallable within 5 s afterwards and recall keeps answering (issue 42:
one such record used to fail the ingest flow every 30 s for every tenant).

One flow and many bad records, then one good one, so the run stays short.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from sinks import keystore
from tests.helpers.api_client import api_client
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

BAD_TEXT = {"surrogate": "\ud83d", "nul": "\x00"}
CONTROLS = {"newline": "\n", "esc": "\x1b", "c1": "\x85"}

# field -> (where the bad text goes in the event, the path the reason names)
EVENT_FIELDS = ["app_id", "session_id", "task_id", "msg_id", "name", "content", "focus"]
EVENT_FIELDS += ["entity_type", "tag_key", "tag_value"]
ID_FIELDS = ["app_id", "session_id", "task_id", "msg_id", "tag_key"]
NAMED = {
    "app_id": "app_id",
    "session_id": "session_id",
    "task_id": "task_id",
    "msg_id": "messages[0].msg_id",
    "name": "messages[0].name",
    "content": "messages[0].content",
    "focus": "strategy.focus",
    "entity_type": "strategy.entity_types[0]",
    "tag_key": "strategy.tags",
    "tag_value": "strategy.tags.k[0]",
}


def _event(user_id: int, marker: str, field: str, value: str) -> dict:
    turn: dict = {"role": "user", "content": f"I like tea {marker}"}
    event: dict = {"user_id": user_id, "task_id": f"t-{marker}-{field}", "messages": [turn]}
    if field in ("app_id", "session_id", "task_id"):
        event[field] = value
        if field == "session_id":
            event["level"] = "SESSION"
    elif field in ("msg_id", "name"):
        turn[field] = value
    elif field == "content":
        turn["content"] = f"tea {value}"
        event["app_id"] = marker  # where the DLQ search finds it
    elif field == "focus":
        event["strategy"] = {"focus": value}
    elif field == "entity_type":
        event["strategy"] = {"entity_types": [value]}
    elif field == "tag_key":
        event["strategy"] = {"tags": {value: 1}}
    elif field == "tag_value":
        event["strategy"] = {"tags": {"k": [value]}}
    return event


def _dlq(bootstrap: str, marker: bytes, expected: int, timeout: float = 40) -> list:
    """Every DLQ record with ``marker``: until ``expected`` are in, then 2 s more (to see a
    second copy of any)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"dlq-{uuid.uuid4()}"})
    consumer.assign([TopicPartition("memory.dlq", p, 0) for p in range(2)])
    found: list = []
    deadline, settle = time.monotonic() + timeout, None
    while time.monotonic() < (settle or deadline):
        msg = consumer.poll(0.3)
        if msg is not None and not msg.error() and marker in (msg.value() or b""):
            found.append(msg)
        if settle is None and len(found) >= expected:
            settle = time.monotonic() + 2
    consumer.close()
    return found


@pytest.fixture(scope="module")
def t2(settings, stores, runtime, ingest, tmp_path_factory):
    """An HTTP client with an admin key of tenant t2."""
    path = tmp_path_factory.mktemp("text_rule_keys") / "api_keys.json"
    key, _ = keystore.create(path, "t2", "admin", [], global_grant=False, now=datetime.now(UTC))
    s = settings.model_copy(update={"api_keys_file": path})
    with api_client(s, stores, runtime, client=("127.0.0.1", 40002)) as client:
        client.headers["Authorization"] = f"Bearer {key}"
        yield client


def test_bad_text_in_any_field_goes_to_the_dlq_once_and_nothing_stops(
    runtime, ingest, lifecycle, servers, api, t2, user_id
) -> None:
    marker = uuid.uuid4().hex
    producer = Producer({"bootstrap.servers": servers.kafka_bootstrap})
    key = str(user_id).encode()
    bad: dict[bytes, tuple[str, str]] = {}  # value -> (topic, the path its reason names)

    def send(topic: str, record: dict, named: str) -> None:
        value = json.dumps(record).encode()  # ASCII: a surrogate travels as \ud83d
        bad[value] = (topic, named)
        producer.produce(topic, key=key, value=value)

    for field in EVENT_FIELDS:
        for text in BAD_TEXT.values():
            send("memory.conversations", _event(user_id, marker, field, f"x{text}"), NAMED[field])
    for field in ID_FIELDS:
        for text in CONTROLS.values():
            named = "strategy.tags" if field == "tag_key" else field  # pydantic's loc
            send("memory.conversations", _event(user_id, marker, field, f"x{text}"), named)
    for text in [*BAD_TEXT.values(), *CONTROLS.values()]:
        command = {"op": "delete", "command_id": f"c{text}", "user_id": user_id}
        send("memory.commands", {**command, "payload": {"memory_ids": [marker]}}, "command_id")
    for text in BAD_TEXT.values():
        command = {"op": "delete", "command_id": f"c-{marker}", "user_id": user_id}
        for payload, named in (
            ({"memory_ids": [f"m{text}"]}, "payload.memory_ids[0]"),
            ({"app_id": f"a{text}", "m": marker}, "payload.app_id"),
        ):
            send("memory.commands", {**command, "payload": payload}, named)
    now = datetime.now(UTC).isoformat()
    for text in [*BAD_TEXT.values(), *CONTROLS.values()]:
        hits = {"user_id": user_id, "memory_ids": [marker, f"m{text}"], "at": now}
        send("memory.recall_hits", hits, "memory_ids")
    assert producer.flush(20) == 0

    # another tenant's add, after every bad record: recallable within 5 s
    started = time.monotonic()
    body = {"user_id": user_id, "messages": [{"role": "user", "content": "I keep bees."}]}
    added = t2.post("/memory/v1/add", json=body).json()
    assert added["code"] == 0, added
    query = {"user_id": user_id, "query": "bees", "min_relevance": 0, "timeout_ms": 5000}
    wait_for(
        lambda: t2.post("/memory/v1/recall", json=query).json()["data"]["memories"],
        timeout=5,
        interval=0.1,
        what="t2's add recallable",
    )
    took = time.monotonic() - started

    found = _dlq(servers.kafka_bootstrap, marker.encode(), expected=len(bad))
    values = [m.value() for m in found]
    assert sorted(values) == sorted(bad), (len(values), len(bad))  # each once, none lost
    for m in found:
        topic, named = bad[m.value()]
        headers = {k: v.decode() for k, v in m.headers()}
        assert headers["source_topic"] == topic
        assert named in headers["error"], (named, headers["error"])
    # a refused event whose task_id is an id fails its task with the reason
    failed = runtime.tasks.get(f"t-{marker}-name", tenant="default")
    assert failed and failed["status"] == "failed" and "messages[0].name" in failed["reason"]
    # recall keeps answering, for the default tenant too
    out = api.post("/memory/v1/recall", json={**query, "query": "tea"}).json()
    assert out["code"] == 0, out
    assert took < 5


def test_a_config_record_with_bad_text_is_refused_and_nothing_changes(settings) -> None:
    from memstream.schemas.events import TOPIC_CONFIG
    from sinks.config_topic import ConfigFollower, ensure_config_topic
    from sinks.kafka import KafkaBus

    prefix = f"cfg{uuid.uuid4().hex[:8]}."
    bus = KafkaBus.from_settings(settings.model_copy(update={"kafka_topic_prefix": prefix}))
    bus.setup()
    at = "2026-12-01T00:00:00Z"

    def send(key: str, value, by: str = "me") -> None:
        body = json.dumps({"value": value, "by": by, "at": at}).encode()  # ASCII escapes
        bus.produce_json(bus.topic(TOPIC_CONFIG), key, body)

    try:
        ensure_config_topic(bus)
        follower = ConfigFollower(bus, settings, poll_s=0.05).start()
        assert follower.ready.wait(20)
        for text in BAD_TEXT.values():
            send("recall_fusion", f"rrf{text}")
            send("min_relevance", 0.5, by=f"me{text}")
            send("min_relevance", {"nested": [text]})
        for text in ["\x00", *CONTROLS.values()]:  # a key's app_id
            send(f"app/app{text}/min_relevance", 0.5)
        bus.flush(10)
        wait_for(lambda: follower.refused == 10, 10, 0.05, "ten refusals")
        assert follower.applied == 0 and follower.current is settings
        send("min_relevance", 0.5, by="me\nyou")  # a newline is text
        bus.flush(10)
        wait_for(lambda: follower.applied == 1, 10, 0.05, "a good record after the bad ones")
        assert follower.current.min_relevance == 0.5
        follower.stop()
    finally:
        bus.close()
