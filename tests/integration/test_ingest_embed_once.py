"""A fact the writer will not store is not embedded (issue 33): an exact duplicate of a
memory the user already holds in the same scope is skipped by the writer, so the embed
step gives it the held row's vector instead of a model call. The same words in another
app are a new memory there and are embedded.

The embedder is the runtime's production one, wrapped by a counter; Kafka, Redis, chDB
and Milvus Lite are the session's real servers.
"""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Producer

from tests.integration.test_ingest_poison import _final

pytestmark = pytest.mark.integration


class CountingEmbedder:
    def __init__(self, inner) -> None:
        self.inner, self.texts = inner, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts):
        self.texts.extend(texts)
        return self.inner.embed(texts)


def test_an_exact_duplicate_is_not_embedded_again_but_another_app_s_copy_is(
    runtime, ingest, servers, monkeypatch
) -> None:
    user = 9_320_000_000 + int(uuid.uuid4().int % 1_000_000)
    fact = f"I keep bees on the roof of building {uuid.uuid4().int % 10_000}."
    counter = CountingEmbedder(runtime.embedder)
    monkeypatch.setattr(runtime, "embedder", counter, raising=True)
    producer = Producer({"bootstrap.servers": servers.kafka_bootstrap})

    def send(task_id: str, app_id: str) -> dict:
        body = {"task_id": task_id, "user_id": user, "app_id": app_id,
                "messages": [{"role": "user", "content": fact}]}  # fmt: skip
        producer.produce("memory.conversations", key=str(user).encode(),
                         value=json.dumps(body).encode())  # fmt: skip
        producer.flush(10)
        return _final(runtime, task_id, "done")

    first = send(f"t-{user}-1", "bees")
    assert first["counts"]["added"] == 1, first
    embedded = [t for t in counter.texts if "bees" in t]
    assert len(embedded) == 1, counter.texts

    again = send(f"t-{user}-2", "bees")
    assert again["counts"]["skipped"] == 1 and again["counts"]["added"] == 0, again
    assert [t for t in counter.texts if "bees" in t] == embedded  # no model call

    other = send(f"t-{user}-3", "hives")  # another app: a memory of its own, embedded
    assert other["counts"]["added"] == 1, other
    assert len([t for t in counter.texts if "bees" in t]) == 2
    held = runtime.memories.load(user, tenant="default")
    assert sorted(m.app_id for m in held) == ["bees", "hives"]
