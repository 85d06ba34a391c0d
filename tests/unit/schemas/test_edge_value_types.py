"""Say no instead of changing values (issue 31): instants, tags, blank text, booleans and
the one rule for app_id / session_id / tag keys, as types every edge shares."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import TypeAdapter, ValidationError

from core.scope import InvalidScope, ScopeRequest, Switches, resolve_scope
from memstream.schemas.commands import StructuredMemory
from memstream.schemas.events import ConversationEvent, Message
from memstream.schemas.limits import (
    STORE_TIME_MAX,
    STORE_TIME_MIN,
    TAG_INT_MAX,
    TAG_INT_MIN,
    CustomTags,
    ScopeId,
    StoreTime,
)

STORE_TIME = TypeAdapter(StoreTime)


@pytest.mark.parametrize(
    "raw",
    [
        "9999-12-31T23:59:59-01:00",  # year 10000 in UTC: OverflowError before (B1, B2, B4)
        "0001-01-01T00:00:00+01:00",  # year 0 in UTC
        "9999-12-31T23:59:59Z",
        "2300-01-01T00:00:00Z",
        "1899-12-31T23:59:59.999Z",
        "2299-12-31T23:00:00-01:00",  # 2300 in UTC
    ],
)
def test_an_instant_outside_the_store_range_is_refused_naming_the_range(raw) -> None:
    with pytest.raises(ValidationError, match="1900-01-01T00:00:00Z .. 2299-12-31T23:59:59Z"):
        STORE_TIME.validate_json(f'"{raw}"')


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2025-03-01T10:00:00+02:00", datetime(2025, 3, 1, 8, tzinfo=UTC)),
        ("2025-03-01T10:00:00", datetime(2025, 3, 1, 10, tzinfo=UTC)),  # naive = UTC
        ("1900-01-01T01:00:00+01:00", STORE_TIME_MIN),
        ("2299-12-31T23:59:59Z", STORE_TIME_MAX),
    ],
)
def test_an_instant_inside_the_range_is_the_same_instant_in_utc(raw, expected) -> None:
    got = STORE_TIME.validate_json(f'"{raw}"')
    assert got == expected and got.utcoffset() == timedelta(0)


def test_message_and_event_times_use_the_store_range() -> None:
    with pytest.raises(ValidationError, match="ts"):
        Message(role="user", content="hi", ts="9999-12-31T23:59:59-01:00")
    with pytest.raises(ValidationError, match="ts"):
        ConversationEvent(
            user_id=1, messages=[{"role": "user", "content": "hi"}], ts="0001-01-01T00:00:00+01:00"
        )
    tz = timezone(timedelta(hours=-1))
    m = Message(role="user", content="hi", ts=datetime(2025, 1, 1, 23, 30, tzinfo=tz))
    assert m.ts == datetime(2025, 1, 2, 0, 30, tzinfo=UTC)


def test_expire_at_outside_the_range_is_refused() -> None:
    with pytest.raises(ValidationError, match="expire_at"):
        StructuredMemory(user_id=1, content="x", expire_at="9999-12-31T23:59:59-01:00")


@pytest.mark.parametrize(
    "tags",
    [
        {"a": float("nan")},
        {"a": float("inf")},
        {"a": [1, {"b": float("-inf")}]},
        {"a": 2**70},
        {"a": TAG_INT_MAX + 1},
        {"a": {"b": TAG_INT_MIN - 1}},
        {"bad\nkey": 1},
        {"": 1},
        {"k" * 129: 1},
        {"tab\tkey": 1},
    ],
)
def test_tags_that_the_stores_would_change_are_refused(tags) -> None:
    with pytest.raises(ValidationError):
        TypeAdapter(CustomTags).validate_python(tags)


def test_tags_json_nan_is_refused_and_64_bit_integers_kept() -> None:
    adapter = TypeAdapter(CustomTags)
    with pytest.raises(ValidationError, match="NaN"):
        adapter.validate_json('{"a": NaN}')
    tags = {"a": TAG_INT_MAX, "b": TAG_INT_MIN, "c": 1.5, "d": True, "k" * 128: None}
    assert adapter.validate_python(tags) == tags


@pytest.mark.parametrize("content", ["", "   \t  ", "\n\n", "\u3000"])
def test_blank_content_is_refused(content) -> None:
    with pytest.raises(ValidationError, match="content"):
        Message(role="user", content=content)
    with pytest.raises(ValidationError, match="content"):
        StructuredMemory(user_id=1, content=content)


def test_content_is_kept_as_sent() -> None:
    assert Message(role="user", content="  hi  ").content == "  hi  "


@pytest.mark.parametrize("value", ["yes", "true", 1, 0, "1"])
def test_booleans_are_strict(value) -> None:
    with pytest.raises(ValidationError, match="is_important"):
        StructuredMemory(user_id=1, content="x", is_important=value)
    assert StructuredMemory(user_id=1, content="x", is_important=True).is_important is True


@pytest.mark.parametrize(
    "value", ["", "a\nb", "a\tb", "nul\x00", "del\x7f", "c1\x85", "x" * 129, 7]
)
def test_one_rule_for_app_and_session_ids(value) -> None:
    with pytest.raises(ValidationError):
        TypeAdapter(ScopeId).validate_python(value)
    for field in ("app_id", "session_id"):
        with pytest.raises(ValidationError, match=field):
            ConversationEvent(
                user_id=1, messages=[{"role": "user", "content": "hi"}], **{field: value}
            )
        with pytest.raises(ValidationError, match=field):
            StructuredMemory(user_id=1, content="x", **{field: value})


@pytest.mark.parametrize("value", ["p2", "app with spaces", "émoji 🙂", "a\\b", "x" * 128])
def test_what_add_takes_recall_takes(value) -> None:
    assert TypeAdapter(ScopeId).validate_python(value) == value
    event = ConversationEvent(
        user_id=1, app_id=value, session_id=value, messages=[{"role": "user", "content": "hi"}]
    )
    req = ScopeRequest(user_id=1, app_id=event.app_id, session_id=event.session_id)
    assert not resolve_scope(req, Switches()).is_empty


def test_recall_refuses_what_the_type_refuses() -> None:
    with pytest.raises(InvalidScope):
        resolve_scope(ScopeRequest(user_id=1, app_id="c1\x85"), Switches())
