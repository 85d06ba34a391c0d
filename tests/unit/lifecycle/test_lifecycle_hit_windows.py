"""Recall-hit events: parsing (bad → Rejected) and one command per user window."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from bytewax.connectors.kafka import KafkaSourceMessage

from dataflows.ingest.items import Rejected
from dataflows.lifecycle.commands import RECALL_HITS_OP, RecallHitsPayload
from dataflows.lifecycle.hits import parse_hits, window_command
from memstream.schemas.events import RecallHits

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def msg(value: bytes | None) -> KafkaSourceMessage:
    return KafkaSourceMessage(b"7", value, topic="memory.recall_hits", partition=1, offset=42)


def test_a_good_event_parses() -> None:
    body = {"user_id": 7, "memory_ids": ["a", "b"], "at": NOW.isoformat()}
    parsed = parse_hits(msg(json.dumps(body).encode()))
    assert isinstance(parsed, RecallHits) and parsed.memory_ids == ["a", "b"]


def test_bad_events_become_rejects_that_keep_their_origin() -> None:
    for raw, words in [
        (None, "empty"),
        (b"\xff\xfe", "JSON"),
        (b"{not json", "JSON"),
        (json.dumps({"user_id": -1, "memory_ids": [], "at": "x"}).encode(), "user_id"),
    ]:
        bad = parse_hits(msg(raw))
        assert isinstance(bad, Rejected) and words in bad.reason
        assert (bad.source.topic, bad.source.partition, bad.source.offset) == (
            "memory.recall_hits",
            1,
            42,
        )
        assert bad.source.value == raw


def test_a_window_folds_into_one_command_with_counts_and_the_latest_time() -> None:
    hits = [
        RecallHits(user_id=7, memory_ids=["a", "b"], at=NOW),
        RecallHits(user_id=7, memory_ids=["a"], at=NOW + timedelta(seconds=3)),
        RecallHits(user_id=7, memory_ids=["a"], at=datetime(2026, 3, 1, 11)),  # naive = UTC
    ]
    cmd = window_command(("7", hits))
    assert cmd is not None and cmd.op == RECALL_HITS_OP and cmd.user_id == 7
    payload = RecallHitsPayload.model_validate(cmd.payload)
    assert payload.hits == {"a": 3, "b": 1}
    assert payload.at == NOW + timedelta(seconds=3) and payload.reply is False


def test_a_window_without_ids_sends_nothing() -> None:
    assert window_command(("7", [RecallHits(user_id=7, memory_ids=[], at=NOW)])) is None
