"""``max_chars`` on recall through HTTP (issue 32): the best-ranked memories that fit
whole, in rank order, with the characters used; without it the answer is as before."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

FACTS = [
    "I am allergic to peanuts and carry an epinephrine pen everywhere I go since 2019.",
    "Peanut butter cookies made me sick at a party last year.",
    "I like green tea.",
    "My sister lives in Porto.",
]


def _recall(api, user_id: int, **extra) -> dict:
    body = {"user_id": user_id, "query": "peanut allergy", "min_relevance": 0, **extra}
    return api.post("/memory/v1/recall", json=body).json()


def test_max_chars_keeps_whole_memories_in_rank_order(api, ingest, user_id) -> None:
    for fact in FACTS:
        got = api.post("/memory/v1/add_structured", json={"user_id": user_id, "content": fact})
        assert got.json()["code"] == 0, got.json()
    full = _recall(api, user_id, top_k=10)
    assert full["code"] == 0 and "chars_used" not in full["data"], full  # absent: as before
    ranked = [m["content"] for m in full["data"]["memories"]]
    assert len(ranked) == len(FACTS)

    budget = len(ranked[0]) + len(ranked[-1])
    cut = _recall(api, user_id, top_k=10, max_chars=budget)["data"]
    got = [m["content"] for m in cut["memories"]]
    assert got and got[0] == ranked[0]
    assert got == [t for t in ranked if t in got]  # rank order kept
    assert cut["chars_used"] == sum(len(t) for t in got) <= budget
    assert cut["max_chars"] == budget
    # nothing fits: no memories, hit false
    none = _recall(api, user_id, max_chars=5)["data"]
    assert none["memories"] == [] and none["hit"] is False and none["chars_used"] == 0


@pytest.mark.parametrize("bad", [0, -1, 1.5, "500", True, None])
def test_a_max_chars_that_is_no_positive_integer_is_a_40001(api, user_id, bad) -> None:
    if bad is None:
        body = {"user_id": user_id, "query": "tea", "max_chars": {"n": 1}}
    else:
        body = {"user_id": user_id, "query": "tea", "max_chars": bad}
    got = api.post("/memory/v1/recall", json=body).json()
    assert got["code"] == 40001, got
