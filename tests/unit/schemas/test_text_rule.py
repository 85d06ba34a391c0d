"""The text rule of every edge (docs/api.md#text), strict numbers and the blank rule, as
types and as the walk over decoded JSON that runs before any model."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from memstream.schemas.commands import Command, StructuredMemory
from memstream.schemas.events import ConversationEvent, RecallHits
from memstream.schemas.limits import first_bad_text, is_blank
from memstream.schemas.requests import (
    BatchDeleteRequest,
    ChangeLogRequest,
    RecallRequest,
    SqlRequest,
    UserListRequest,
)

SURROGATE = "\ud83d"
NUL = "\x00"
CONTROLS = ["\n", "\t", "\x1b", "\x7f", "\x85", "\x9f"]


def _event(**over) -> dict:
    return {"user_id": 7, "messages": [{"role": "user", "content": "I like tea"}], **over}


# ------------------------------------------------------------------- the walk
@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"app_id": SURROGATE}, "app_id"),
        ({"messages": [{"content": "ok"}, {"name": "a" + NUL}]}, "messages[1].name"),
        ({"strategy": {"entity_types": ["x", SURROGATE]}}, "strategy.entity_types[1]"),
        ({"strategy": {"tags": {"k": {"deep": [NUL]}}}}, "strategy.tags.k.deep[0]"),
        ({"custom_tags": {"my key": SURROGATE}}, 'custom_tags["my key"]'),
        ({"custom_tags": {SURROGATE: 1}}, "custom_tags: a key"),
        ([SURROGATE], "[0]"),
        (SURROGATE, "value"),
    ],
)
def test_the_walk_names_the_json_path_of_the_first_bad_string(data, where) -> None:
    found = first_bad_text(data)
    assert found is not None and found.startswith(where), found
    assert SURROGATE not in found and NUL not in found  # safe in DLQ headers and logs
    found.encode("ascii")


def test_the_walk_passes_text_newlines_and_every_plane() -> None:
    data = json.loads(json.dumps(_event(name="a\nb", tags={"k": "line\nline 😀 中文 é"})))
    assert first_bad_text(data) is None
    assert first_bad_text(json.loads('"\\ud83d\\ude00"')) is None  # a pair is one emoji


def test_the_walk_never_quotes_a_long_key() -> None:
    found = first_bad_text({"k" * 5000 + " ": NUL})
    assert found is not None and len(found) < 120, found


# ------------------------------------------------------------------- the types
@pytest.mark.parametrize("bad", [SURROGATE, NUL])
@pytest.mark.parametrize(
    "field",
    ["app_id", "session_id", "task_id", "msg_id", "name", "focus", "entity_type", "tag_key"],
)
def test_every_string_field_of_an_event_refuses_surrogates_and_nul(field, bad) -> None:
    with pytest.raises(ValidationError):
        ConversationEvent.model_validate(_with(field, "x" + bad))


@pytest.mark.parametrize("control", CONTROLS)
@pytest.mark.parametrize("field", ["app_id", "session_id", "task_id", "msg_id", "tag_key"])
def test_ids_refuse_control_characters(field, control) -> None:
    with pytest.raises(ValidationError):
        ConversationEvent.model_validate(_with(field, "x" + control))


@pytest.mark.parametrize("field", ["name", "focus", "tag_value", "content"])
def test_newlines_stay_legal_in_content_names_and_tag_values(field) -> None:
    ConversationEvent.model_validate(_with(field, "line one\nline two\ttab"))


def _with(field: str, value: str) -> dict:
    turn: dict = {"role": "user", "content": "I like tea"}
    event: dict = {"user_id": 7, "messages": [turn]}
    if field in ("app_id", "session_id", "task_id"):
        event[field] = value
    elif field in ("msg_id", "name", "content"):
        turn[field] = value
    elif field == "focus":
        event["strategy"] = {"focus": value}
    elif field == "entity_type":
        event["strategy"] = {"entity_types": [value]}
    elif field == "tag_key":
        event["strategy"] = {"tags": {value: 1}}
    elif field == "tag_value":
        event["strategy"] = {"tags": {"k": value}}
    return event


def test_custom_tags_refuse_nested_surrogates_and_nul() -> None:
    for tags in ({"a": {"b": [SURROGATE]}}, {"a": {NUL: 1}}, {"a": NUL}):
        with pytest.raises(ValidationError):
            StructuredMemory.model_validate({"user_id": 1, "content": "x", "custom_tags": tags})


def test_recall_hits_and_commands_refuse_control_characters_in_ids() -> None:
    with pytest.raises(ValidationError):
        RecallHits.model_validate({"user_id": 1, "memory_ids": ["m\n"], "at": "2025-01-01"})
    with pytest.raises(ValidationError):
        Command.model_validate({"op": "delete", "command_id": "c" + NUL, "user_id": 1})


# ------------------------------------------------------------------- strict numbers
@pytest.mark.parametrize(
    ("model", "body"),
    [
        (RecallRequest, {"query": "q", "top_k": "5"}),
        (RecallRequest, {"query": "q", "top_k": 5.0}),
        (RecallRequest, {"query": "q", "top_k": True}),
        (RecallRequest, {"query": "q", "min_relevance": "0.5"}),
        (RecallRequest, {"query": "q", "timeout_ms": "100"}),
        (RecallRequest, {"query": "q", "max_chars": "100"}),
        (ChangeLogRequest, {"page": "2"}),
        (ChangeLogRequest, {"page_size": "10"}),
        (UserListRequest, {"page": "2"}),
        (UserListRequest, {"page_size": "10"}),
    ],
)
def test_numbers_are_json_numbers(model, body) -> None:
    with pytest.raises(ValidationError):
        model.model_validate({"user_id": 1, **body})


def test_a_json_integer_is_a_valid_float_and_real_numbers_pass() -> None:
    req = RecallRequest.model_validate(
        {"user_id": 1, "query": "q", "top_k": 5, "min_relevance": 1, "timeout_ms": 100}
    )
    assert (req.top_k, req.min_relevance) == (5, 1)
    assert SqlRequest.model_validate({"query": "SELECT 1", "max_rows": 3}).max_rows == 3
    with pytest.raises(ValidationError):
        SqlRequest.model_validate({"query": "SELECT 1", "max_rows": "3"})


def test_request_ids_and_memory_ids_refuse_control_characters() -> None:
    with pytest.raises(ValidationError):
        BatchDeleteRequest.model_validate({"user_id": 1, "memory_ids": ["m\x1b"]})
    with pytest.raises(ValidationError):
        BatchDeleteRequest.model_validate({"user_id": 1, "memory_ids": ["m"], "request_id": "r\n"})


# ------------------------------------------------------------------- blank
@pytest.mark.parametrize(
    "text",
    [
        "",
        " \t\n",
        "\u200b",
        "\u200b\u200c\u200d\u2060\ufeff",
        "\u3164",
        "\u2800\u2800",
        "\u115f\u1160\uffa0",
        "\u00a0\u3000\u2028",
        "\x00",
        " \u200b \u3164 ",
    ],
)
def test_invisible_text_is_blank_and_refused_as_content(text) -> None:
    assert is_blank(text)
    with pytest.raises(ValidationError, match="blank|NUL|at least 1"):
        ConversationEvent.model_validate(_with("content", text))


@pytest.mark.parametrize("text", ["a", " \u200bx", "\u2800⠁", "中", "😀", "\u3164ㅎ"])
def test_visible_text_is_not_blank(text) -> None:
    assert not is_blank(text)
    ConversationEvent.model_validate(_with("content", text))
