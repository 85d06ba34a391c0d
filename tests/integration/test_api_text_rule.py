"""The text rule at the HTTP edge (docs/api.md#text), against the real stores: a lone
surrogate or NUL in any string, or a control character in an id, answers 40001 naming
the field, never 50000; strings for numbers and invisible content are 40001 too."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.integration

SURROGATE = "\ud83d"
NUL = "\x00"


def _turns(**turn) -> list[dict]:
    return [{"role": "user", "content": "I drink tea at noon", **turn}]


# endpoint, body (user_id added), the path the message names; bad text goes where "@" is
CASES = {
    "add app_id": ("add", {"app_id": "@", "messages": _turns()}, "app_id"),
    "add session_id": ("add", {"session_id": "@", "messages": _turns()}, "session_id"),
    "add msg_id": ("add", {"messages": _turns(msg_id="@")}, "messages[0].msg_id"),
    "add name": ("add", {"messages": _turns(name="@")}, "messages[0].name"),
    "add content": ("add", {"messages": _turns(content="a@")}, "messages[0].content"),
    "add focus": ("add", {"messages": _turns(), "strategy": {"focus": "@"}}, "strategy.focus"),
    "add entity_types": (
        "add",
        {"messages": _turns(), "strategy": {"entity_types": ["@"]}},
        "strategy.entity_types[0]",
    ),
    "add tag value": (
        "add",
        {"messages": _turns(), "strategy": {"tags": {"k": {"n": ["@"]}}}},
        "strategy.tags.k.n[0]",
    ),
    "add request_id": ("add", {"request_id": "@", "messages": _turns()}, "request_id"),
    "add_structured app_id": ("add_structured", {"app_id": "@", "content": "x"}, "app_id"),
    "add_structured session_id": (
        "add_structured",
        {"session_id": "@", "content": "x"},
        "session_id",
    ),
    "add_structured tag key": (
        "add_structured",
        {"content": "x", "custom_tags": {"@": 1}},
        "custom_tags",
    ),
    "session/close": ("session/close", {"session_id": "@"}, "session_id"),
    "switch": ("switch", {"app_id": "@", "enabled": True}, "app_id"),
    "change_log": ("change_log", {"app_id": "@"}, "app_id"),
    "batch_delete scope": ("batch_delete", {"scope": {"app_id": "@"}}, "scope.app_id"),
    "purge scope": ("purge", {"scope": {"app_id": "@"}}, "scope.app_id"),
    "recall query": ("recall", {"query": "tea @"}, "query"),
    "recall scope": ("recall", {"query": "tea", "scope": {"app_id": "@"}}, "scope.app_id"),
    "update content": ("update", {"memory_id": "m_1", "content": "@x"}, "content"),
    "delete memory_id": ("delete", {"memory_id": "@"}, "memory_id"),
    "history memory_id": ("history", {"memory_id": "@"}, "memory_id"),
}


def _post(api, path: str, body: dict):
    # ensure_ascii: the lone surrogate travels as the JSON escape \ud83d, as callers send it
    return api.post(
        f"/memory/v1/{path}",
        content=json.dumps(body),
        headers={"content-type": "application/json"},
    )


def _fill(value, bad: str):
    if isinstance(value, str):
        return value.replace("@", bad)
    if isinstance(value, list):
        return [_fill(v, bad) for v in value]
    if isinstance(value, dict):
        return {_fill(k, bad): _fill(v, bad) for k, v in value.items()}
    return value


@pytest.mark.parametrize("bad", [SURROGATE, NUL], ids=["surrogate", "nul"])
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_bad_text_in_any_field_answers_40001_naming_it(api, user_id, case, bad) -> None:
    path, body, named = CASES[case]
    resp = _post(api, path, {"user_id": user_id, **_fill(body, bad)})
    out = resp.json()
    assert resp.status_code == 400 and out["code"] == 40001, out
    assert named in out["msg"], out["msg"]
    assert out["trace_id"]


@pytest.mark.parametrize("control", ["\n", "\t", "\x1b", "\x85"])
@pytest.mark.parametrize(
    "case", ["add app_id", "add msg_id", "add request_id", "add_structured tag key"]
)
def test_a_control_character_in_an_id_answers_40001(api, user_id, case, control) -> None:
    path, body, _ = CASES[case]
    out = _post(api, path, {"user_id": user_id, **_fill(body, "x" + control)}).json()
    assert out["code"] == 40001, out


def test_newlines_stay_legal_in_content_names_and_tag_values(api, user_id) -> None:
    body = {
        "user_id": user_id,
        "messages": _turns(content="line one\nline two", name="Ann\nLee"),
        "strategy": {"tags": {"k": "a\nb"}},
    }
    out = _post(api, "add", body).json()
    assert out["code"] == 0, out


@pytest.mark.parametrize(
    "url",
    [
        "/memory/v1/tasks/t%00x",
        "/memory/v1/tasks/t%0Ax",
        "/memory/v1/tasks/%ED%A0%BD",
        "/memory/v1/export/e%00x",
        "/memory/v1/export/e%1Bx",
        "/memory/v1/export/download/e%00x?expires=1&sig=s",
        "/memory/v1/export/download/e?expires=1&sig=s%00",
        "/memory/v1/export/e?link_ttl_s=%00",
    ],
)
def test_path_and_query_parameters_never_answer_5xx(api, url) -> None:
    resp = api.get(url)
    out = resp.json()
    assert resp.status_code < 500 and out["code"] in (40001, 40101, 40401), (url, out)


@pytest.mark.parametrize(
    "body",
    [
        {"query": "tea", "top_k": "5"},
        {"query": "tea", "top_k": True},
        {"query": "tea", "min_relevance": "0.3"},
        {"query": "tea", "timeout_ms": "100"},
    ],
)
def test_a_string_for_a_number_is_40001(api, user_id, body) -> None:
    out = _post(api, "recall", {"user_id": user_id, **body}).json()
    assert out["code"] == 40001, out


def test_a_json_integer_for_a_float_is_accepted(api, user_id) -> None:
    out = _post(api, "recall", {"user_id": user_id, "query": "tea", "min_relevance": 0}).json()
    assert out["code"] == 0, out


@pytest.mark.parametrize("text", ["\u200b", "\u3164", "\u2800\u2800", " \u200b\ufeff "])
def test_invisible_content_is_refused_as_blank(api, runtime, user_id, text) -> None:
    for path, body in [
        ("add", {"messages": _turns(content=text)}),
        ("add_structured", {"content": text}),
    ]:
        out = _post(api, path, {"user_id": user_id, **body}).json()
        assert out["code"] == 40001 and "blank" in out["msg"], out
    assert runtime.memories.load(user_id, tenant="default") == []
