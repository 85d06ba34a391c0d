"""A record that fails for its data goes to memory.dlq and its task ends failed, while
every other record keeps flowing (issue 31: B3 and the guard around the flow's steps).

The LLM here is the production ``rules`` provider wrapped by a test double that raises
on a marker (a model answer no code path expected); Kafka, Redis, chDB and Milvus Lite
are the session's real servers.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Producer

from tests.helpers.waiting import wait_for
from tests.integration.test_ingest_dlq import _dlq_messages

pytestmark = pytest.mark.integration


class PoisonLLM:
    """The runtime's LLM, except that a turn with ``marker`` breaks extraction and a
    fact with ``marker`` breaks the evolution decision (a ValueError / OverflowError)."""

    def __init__(self, inner, extract_marker: str, decide_marker: str) -> None:
        self.inner, self.extract_marker, self.decide_marker = inner, extract_marker, decide_marker

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def extract_facts(self, messages, *args, **kwargs):
        if any(self.extract_marker in m.content for m in messages):
            raise OverflowError("date value out of range")
        return self.inner.extract_facts(messages, *args, **kwargs)

    def decide(self, fact, similar):
        text = getattr(fact, "text", fact)
        if self.decide_marker in text:
            raise ValueError(f"cannot decide on {text!r}")
        return self.inner.decide(fact, similar)


def _event(user_id: int, task_id: str, content: str) -> bytes:
    return json.dumps(
        {"task_id": task_id, "user_id": user_id, "messages": [{"role": "user", "content": content}]}
    ).encode()


def _status(runtime, task_id: str) -> dict | None:
    return runtime.tasks.get(task_id, tenant="default")


def _final(runtime, task_id: str, status: str, timeout: float = 40) -> dict:
    return wait_for(
        lambda: (s := _status(runtime, task_id)) and s["status"] == status and s,
        timeout=timeout,
        what=f"task {task_id} {status}",
    )


def test_a_record_that_breaks_a_step_goes_to_the_dlq_and_others_keep_flowing(
    runtime, ingest, servers, monkeypatch
) -> None:
    base = 9_310_000_000 + int(uuid.uuid4().int % 1_000_000) * 10
    poisoned, bystander = base, base + 1
    marker = uuid.uuid4().hex
    monkeypatch.setattr(
        runtime, "llm", PoisonLLM(runtime.llm, f"x{marker}", f"d{marker}"), raising=True
    )
    producer = Producer({"bootstrap.servers": servers.kafka_bootstrap})

    def send(user_id: int, task_id: str, content: str) -> None:
        producer.produce(
            "memory.conversations",
            key=str(user_id).encode(),
            value=_event(user_id, task_id, content),
        )
        assert producer.flush(20) == 0

    # a first memory of the user, so a later fact of the same scope goes to evolution
    send(poisoned, f"first-{marker}", "I work as a nurse in Porto.")
    _final(runtime, f"first-{marker}", "done")

    send(poisoned, f"extract-{marker}", f"I started a pottery class x{marker}")
    started = time.monotonic()
    send(bystander, f"other-{marker}", "I live in Aveiro with two cats.")
    _final(runtime, f"other-{marker}", "done", timeout=15)
    took = time.monotonic() - started
    assert took < 5, f"another user's turn took {took:.1f} s after the poison"
    _final(runtime, f"extract-{marker}", "failed")  # its own window batch, then this one:
    send(poisoned, f"decide-{marker}", f"I work as a nurse in Porto and Lisbon d{marker}")

    for step in ("extract", "decide"):
        got = _final(runtime, f"{step}-{marker}", "failed")
        assert "failed on this input" in got["reason"], got
        assert marker not in got["reason"]  # reasons never quote the content
    found = _dlq_messages(servers.kafka_bootstrap, marker.encode(), expected=2)
    reasons = sorted(dict(m.headers())["error"].decode() for m in found)
    assert len(reasons) == 2, reasons
    assert reasons[0].startswith("extract failed on this input: OverflowError")
    assert reasons[1].startswith("write failed on this input: ValueError")

    # the poisoned user is not stuck: a later turn of theirs is stored
    send(poisoned, f"after-{marker}", "My sister Ana moved to Braga last spring.")
    after = _final(runtime, f"after-{marker}", "done")
    assert after["counts"]["added"] >= 1


def test_a_key_that_is_no_user_id_goes_to_the_dlq_and_others_keep_flowing(
    runtime, ingest, servers
) -> None:
    marker = uuid.uuid4().hex
    user = 9_320_000_000 + int(uuid.uuid4().int % 1_000_000)
    producer = Producer({"bootstrap.servers": servers.kafka_bootstrap})
    for key in (b"-5", b"+7", b"18446744073709551616", b"\xff\xfe"):
        producer.produce(
            "memory.conversations", key=key, value=_event(5, f"bad-key-{marker}-{key!r}", marker)
        )
    producer.produce(
        "memory.conversations",
        key=str(user).encode(),
        value=_event(user, f"good-{marker}", "I play the cello on Sundays."),
    )
    assert producer.flush(20) == 0
    started = time.monotonic()
    _final(runtime, f"good-{marker}", "done", timeout=20)
    took = time.monotonic() - started
    assert took < 5, f"another user's turn took {took:.1f} s after the bad keys"
    found = _dlq_messages(servers.kafka_bootstrap, marker.encode(), expected=4)
    assert len(found) == 4
    for m in found:
        assert "the key must be the user_id" in dict(m.headers())["error"].decode()


class PoisonEmbedder:
    """The runtime's embedder, except that a text with ``marker`` breaks the model call
    (a ValueError of the data, raised on the embed step's model thread)."""

    def __init__(self, inner, marker: str) -> None:
        self.inner, self.marker = inner, marker

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts):
        if any(self.marker in t for t in texts):
            raise ValueError("a text the model cannot take")
        return self.inner.embed(texts)


def test_a_batch_that_breaks_the_model_call_fails_alone(runtime, ingest, servers, monkeypatch):
    base = 9_320_000_000 + int(uuid.uuid4().int % 1_000_000) * 10
    marker = uuid.uuid4().hex
    monkeypatch.setattr(runtime, "embedder", PoisonEmbedder(runtime.embedder, f"e{marker}"))
    producer = Producer({"bootstrap.servers": servers.kafka_bootstrap})
    sent = {
        f"bad-{marker}": (base, f"I collect old stamps e{marker}"),
        f"ok1-{marker}": (base + 1, "I live in Faro with my brother."),
        f"ok2-{marker}": (base + 2, "I play the cello every Sunday."),
    }
    for task_id, (user_id, content) in sent.items():  # one flush: one shared model call
        producer.produce(
            "memory.conversations",
            key=str(user_id).encode(),
            value=_event(user_id, task_id, content),
        )
    assert producer.flush(20) == 0

    bad = _final(runtime, f"bad-{marker}", "failed")
    assert bad["reason"].startswith("embed failed on this input: ValueError"), bad
    for task_id in (f"ok1-{marker}", f"ok2-{marker}"):
        assert _final(runtime, task_id, "done")["counts"]["added"] >= 1
    found = _dlq_messages(servers.kafka_bootstrap, marker.encode(), expected=1)
    assert [dict(m.headers())["error"].decode()[:26] for m in found] == [
        "embed failed on this input"
    ]
