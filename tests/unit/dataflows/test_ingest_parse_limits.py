"""Kafka input past a limit, with a wrong key or a non-integer user, is refused with a
reason that names the field (never the content), and names the task to fail."""

from __future__ import annotations

import json

import pytest

from core.settings import Settings
from dataflows.ingest.flow import failed_task
from dataflows.ingest.items import Incoming, Rejected, Source
from dataflows.ingest.parse import parse_command, parse_conversation
from tests.helpers.nesting import nested

SECRET = "my bank PIN is 4711"


def _event(**over) -> dict:
    return {
        "task_id": "t_limits",
        "user_id": 42,
        "messages": [{"role": "user", "content": SECRET}],
        **over,
    }


def _src(value: dict | bytes, key: bytes | None = b"42") -> Source:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return Source("memory.conversations", 0, 7, key, raw)


SETTINGS = Settings(max_message_bytes=1024, max_event_bytes=4096, max_turns_per_event=5)

CASES = {
    "user_id true": (_src(_event(user_id=True), key=b"1"), "user_id"),
    "user_id string": (_src(_event(user_id="42")), "user_id"),
    "user_id float": (_src(_event(user_id=42.0)), "user_id"),
    "key of another user": (_src(_event(), key=b"43"), "does not match user_id 42"),
    "no key": (_src(_event(), key=None), "no key does not match"),
    "tags 9 deep": (_src(_event(strategy={"tags": nested(9)})), "deeper than 8"),
    "tags that make the event too big": (
        _src(_event(strategy={"tags": {"a": "x" * 3000 * 3}})),
        "max_event_bytes",
    ),
    "message over max_message_bytes": (
        _src(_event(messages=[{"role": "user", "content": SECRET + "x" * 2000}])),
        "max_message_bytes",
    ),
    "event over max_event_bytes": (
        _src(_event(messages=[{"role": "user", "content": SECRET + "x" * 900}] * 5)),
        "max_event_bytes",
    ),
    "too many turns": (
        _src(_event(messages=[{"role": "user", "content": SECRET}] * 6)),
        "max_turns_per_event",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_refused_with_a_reason_and_the_task_to_fail(case: str) -> None:
    src, expected = CASES[case]
    got = parse_conversation(src, SETTINGS)
    assert isinstance(got, Rejected), case
    assert expected in got.reason, got.reason
    assert SECRET not in got.reason and "4711" not in got.reason
    assert got.task_id == "t_limits"  # the accepted task is failed, not left "accepted"
    [result] = failed_task(got)
    assert result.failed and result.code == 40001 and result.reason == got.reason


def test_tags_within_limits_and_matching_key_are_accepted() -> None:
    got = parse_conversation(_src(_event(strategy={"tags": nested(8)})), SETTINGS)
    assert isinstance(got, Incoming) and got.task_id == "t_limits"


def test_tags_over_their_byte_limit_are_refused_even_in_a_large_enough_event() -> None:
    big = Settings(max_event_bytes=64 * 1024)
    got = parse_conversation(_src(_event(strategy={"tags": {"a": "x" * 9000}})), big)
    assert isinstance(got, Rejected) and "8192 bytes" in got.reason


def test_unparseable_values_name_no_task() -> None:
    for raw in (b"not json", b"[" * 100_000, b'{"task_id": 5, "user_id": 1}'):
        got = parse_conversation(_src(raw), SETTINGS)
        assert isinstance(got, Rejected) and got.task_id is None
        assert failed_task(got) == []


def test_a_command_keyed_by_another_user_is_refused() -> None:
    cmd = {"op": "delete", "command_id": "c1", "user_id": 42, "payload": {}}
    src = Source("memory.commands", 0, 1, b"41", json.dumps(cmd).encode())
    got = parse_command(src, SETTINGS)
    assert isinstance(got, Rejected) and "does not match user_id 42" in got.reason
    ok = parse_command(Source("memory.commands", 0, 1, b"42", json.dumps(cmd).encode()), SETTINGS)
    assert not isinstance(ok, Rejected)
