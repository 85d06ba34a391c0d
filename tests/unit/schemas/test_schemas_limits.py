"""The edge's limits as types: strict user ids, bounded custom_tags, storable query times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import TypeAdapter, ValidationError

from memstream.schemas.limits import (
    MAX_TAGS_DEPTH,
    STORE_TIME_MAX,
    STORE_TIME_MIN,
    CustomTags,
    QueryTime,
    UserId,
    json_depth,
)
from tests.helpers.nesting import nested


@pytest.mark.parametrize(
    ("value", "depth"),
    [
        (1, 0),
        ({}, 1),
        ({"a": 1}, 1),
        ({"a": [1, {"b": 2}]}, 3),
        (nested(8), 8),
        (nested(10_000), 10),
    ],
)
def test_json_depth(value, depth) -> None:
    assert json_depth(value) == depth  # a hostile tree stops counting past the limit


@pytest.mark.parametrize(
    ("tags", "ok"),
    [
        ({"a": {"b": [1, 2]}}, True),
        (nested(MAX_TAGS_DEPTH), True),
        (nested(MAX_TAGS_DEPTH + 1), False),
        (nested(100_000), False),
        ({"a": "é" * 4000}, True),  # 8,008 bytes as UTF-8
        ({"a": "é" * 4096}, False),  # 4,105 characters but 8,200 bytes
        ({"a": "x" * 8200}, False),
    ],
)
def test_custom_tags_depth_and_bytes(tags, ok) -> None:
    adapter = TypeAdapter(CustomTags)
    if ok:
        assert adapter.validate_python(tags) == tags
    else:
        with pytest.raises(ValidationError):
            adapter.validate_python(tags)


@pytest.mark.parametrize(
    ("raw", "ok"), [("7", True), ("true", False), ('"7"', False), ("7.0", False), ("-1", False)]
)
def test_user_id_is_a_json_integer(raw, ok) -> None:
    adapter = TypeAdapter(UserId)
    if ok:
        assert adapter.validate_json(raw) == 7
    else:
        with pytest.raises(ValidationError):
            adapter.validate_json(raw)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(999, 1, 1), STORE_TIME_MIN),
        (datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))), STORE_TIME_MIN),
        (datetime(9999, 12, 31, tzinfo=timezone(timedelta(hours=-1))), STORE_TIME_MAX),
        (datetime(2026, 1, 1, 12), datetime(2026, 1, 1, 12, tzinfo=UTC)),
        (
            datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=8))),
            datetime(2026, 1, 1, 4, tzinfo=UTC),
        ),
    ],
)
def test_query_times_are_utc_inside_what_the_store_holds(value, expected) -> None:
    got = TypeAdapter(QueryTime).validate_python(value)
    assert got == expected and got.tzinfo is UTC


def test_clip_tags_cuts_a_legacy_deep_tree_at_the_limit_and_keeps_it_as_text() -> None:
    import json

    from memstream.schemas.limits import MAX_TAGS_DEPTH, clip_tags, json_depth

    small = {"a": {"b": [1, {"c": 2}]}}
    assert clip_tags(small) is small
    deep = {"topic": "bike", "deep": nested(252), "list": [[[[[[[[[[1]]]]]]]]]]}
    clipped = clip_tags(deep)
    assert json_depth(clipped) == MAX_TAGS_DEPTH and clipped["topic"] == "bike"
    node = clipped["deep"]
    for _ in range(MAX_TAGS_DEPTH - 2):
        node = node["k"]
    assert isinstance(node["k"], str) and json.loads(node["k"]) == nested(252 - MAX_TAGS_DEPTH + 1)
    assert json_depth(clip_tags({"l": deep["list"]})) == MAX_TAGS_DEPTH
