"""The pure rules of key-value items (core.kv_items): ids, embedded text, filters,
namespaces, ranking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from core.kv_items import (
    ItemView,
    cosines,
    embedded_text,
    filter_problem,
    in_scope,
    item_id,
    list_namespaces,
    matches,
    rank,
    value_text,
)
from memstream.schemas.json_types import JsonObject

T = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_id_names_tenant_user_scope_namespace_and_key_apart() -> None:
    base = item_id("t", 1, "app", None, ["a", "b"], "k")
    assert base.startswith("i_") and base == item_id("t", 1, "app", None, ["a", "b"], "k")
    others = {
        item_id("u", 1, "app", None, ["a", "b"], "k"),
        item_id("t", 2, "app", None, ["a", "b"], "k"),
        item_id("t", 1, None, None, ["a", "b"], "k"),
        item_id("t", 1, "app", "s", ["a", "b"], "k"),
        item_id("t", 1, "app", None, ["ab"], "k"),
        item_id("t", 1, "app", None, ["a"], "b,k"),
        item_id("t", 1, "app", None, ["a", "b"], "K"),
    }
    assert base not in others and len(others) == 7


def test_the_value_is_kept_as_given_and_embedded_as_index_says() -> None:
    value: JsonObject = {"z": 1, "a": {"b": "deep", "l": ["x", "y"]}, "t": "top", "u": "ü"}
    assert value_text(value) == '{"z":1,"a":{"b":"deep","l":["x","y"]},"t":"top","u":"ü"}'
    assert embedded_text(value, None) == value_text(value)
    assert embedded_text(value, ["t", "a.b", "a.l.1", "missing", "z"]) == "top\ndeep\ny\n1"
    assert embedded_text(value, ["a.l"]) == '["x", "y"]'
    assert embedded_text(value, False) == ""


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"n": 3}, True),
        ({"n": 3.0}, True),
        ({"n": True}, False),  # JSON's true is not 1
        ({"flag": True}, True),
        ({"flag": 1}, False),
        ({"n": {"$gt": 2, "$lte": 3}}, True),
        ({"n": {"$lt": 3}}, False),
        ({"n": {"$gt": "2"}}, False),  # incomparable: no match
        ({"s": {"$gte": "abc"}}, True),
        ({"s": {"$gt": 1}}, False),
        ({"flag": {"$gt": 0}}, False),
        ({"s": {"$ne": "x"}}, True),
        ({"absent": None}, True),  # a missing field reads as null (LangGraph's store)
        ({"absent": {"$ne": 1}}, True),
        ({"obj": {"a": 1}}, True),  # an object holding those fields
        ({"obj": {"a": {"$gte": 1}}}, True),
        ({"obj": {"c": 1}}, False),
        ({"l": [1, 2]}, True),
        ({"l": [2, 1]}, False),
        ({"n": 3, "s": "zzz"}, False),
    ],
)
def test_filters(flt, expected) -> None:
    value: JsonObject = {"n": 3, "flag": True, "s": "abc", "obj": {"a": 1, "b": 2}, "l": [1, 2]}
    assert filter_problem(flt) is None
    assert matches(value, flt) is expected


def test_an_unknown_operator_is_named() -> None:
    assert "$regex" in (filter_problem({"n": {"$regex": "x"}}) or "")
    assert "filter.obj.a" in (filter_problem({"obj": {"a": {"$in": [1]}}}) or "")


def test_namespaces_as_langgraph_lists_them() -> None:
    names = [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")]
    assert list_namespaces(names, None, None, None) == sorted(names)
    assert list_namespaces(names, ["a", "*"], None, None) == names[:3]
    assert list_namespaces(names, None, ["b", "c"], None) == [("a", "b", "c"), ("z", "b", "c")]
    assert list_namespaces(names, None, ["*", "*", "c"], None) == [
        ("a", "b", "c"),
        ("z", "b", "c"),
    ]
    assert list_namespaces(names, ["a"], ["x"], None) == [("a", "x")]
    assert list_namespaces(names, ["a", "b", "c", "d"], None, None) == []
    assert list_namespaces(names, None, None, 1) == [("a",), ("z",)]


def _view(mid: str, value: dict, index=None, age: int = 0) -> ItemView:
    at = T - timedelta(minutes=age)
    return ItemView(mid, ("n",), mid, value, index, at, at)


def test_ranking_puts_the_relevant_first_and_the_unembedded_last() -> None:
    views = [
        _view("a", {"t": "cats"}, age=3),
        _view("b", {"t": "dogs"}, age=2),
        _view("c", {"t": "cats"}, index=False, age=1),
        _view("d", {"t": "cats"}, age=0),  # no vector yet
    ]
    vectors = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}
    dense = cosines(np.array([2.0, 0.0]), vectors)
    assert dense == {"a": pytest.approx(1.0), "b": pytest.approx(0.0)}
    ranked = rank(views, "cats", dense, "hybrid")
    assert [v.memory_id for v, _ in ranked] == ["a", "b", "d", "c"]
    assert ranked[0][1] == pytest.approx(1.0) and ranked[1][1] is not None
    assert ranked[2][1] is None and ranked[3][1] is None
    lexical = rank(views, "dogs", None, "lexical")
    assert lexical[0][0].memory_id == "b" and lexical[-1][0].memory_id == "c"


def test_a_read_is_of_its_scope_and_with_subtree_of_the_scopes_beneath_it() -> None:
    scopes = [(None, None), ("a", None), ("a", "s1"), ("b", None), ("b", "s1"), (None, "s9")]

    def read(app: str | None, session: str | None, subtree: bool) -> list[tuple]:
        return [x for x in scopes if in_scope(x[0], x[1], app, session, subtree)]

    assert read(None, None, False) == [(None, None)]
    assert read(None, None, True) == scopes
    assert read("a", None, False) == [("a", None)]
    assert read("a", None, True) == [("a", None), ("a", "s1")]
    assert read("a", "s1", True) == [("a", "s1")]  # a session: itself
    assert read(None, "s9", True) == [(None, "s9")]


def test_a_tie_at_full_relevance_goes_to_the_closer_vector_then_the_better_words() -> None:
    same = [_view("a", {"t": "hello"}), _view("b", {"t": "hello"})]
    ranked = rank(same, "hello", {"a": 1.1, "b": 1.4}, "hybrid")  # both fuse to 1.0
    assert [v.memory_id for v, _ in ranked] == ["b", "a"] and ranked[0][1] == ranked[1][1]
    worded = [_view("a", {"t": "other words"}), _view("b", {"t": "hello there"})]
    ranked = rank(worded, "hello", {"a": 1.2, "b": 1.2}, "hybrid")
    assert [v.memory_id for v, _ in ranked] == ["b", "a"]
