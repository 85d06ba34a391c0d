"""``POST /memory/v1/context`` through HTTP against the real stack (docs/api.md#context,
docs/architecture.md#the-context-call): the profile, the memories recall finds for the
last turns and the entities they name, in one text within the budget; a deleted memory
gone when ``delete`` returns; another app's or tenant's facts never; recall hits counted
unless ``count_hit`` is false; bad bodies refused (40001), a switched-off user 40301."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)
EMPTY = {"items": [], "text": "", "chars_used": 0}
ANNA = [
    "My sister Anna lives in Lyon.",
    "Every Sunday Anna plays chess with me.",
    "Anna is a pharmacist at a small shop near the station.",
    "Anna's birthday is on the fourth of May.",
    "Anna has a grey cat called Pixel.",
    "Anna wants to run the Lyon marathon next spring.",
]
OTHERS = [
    "I work as a nurse on night shifts at the city hospital.",
    "I drink green tea with jasmine every morning before work.",
    "I ride a red bicycle to work when it is dry.",
    "I am allergic to peanuts and avoid shellfish too.",
    "I am learning Spanish on Tuesday evenings at a language school.",
    "I keep a small vegetable garden with tomatoes and beans.",
]


@pytest.fixture
def call(http, keys):
    def send(who: str, path: str, body: dict) -> dict:
        headers = {"Authorization": f"Bearer {keys[1][who]}"}
        return http.post(f"/memory/v1/{path}", json=body, headers=headers).json()

    return send


def _add(call, user_id: int, content: str, who: str = "admin", **extra) -> str:
    body = call(who, "add_structured", {"user_id": user_id, "content": content, **extra})
    assert body["code"] == 0, body
    return body["data"]["memory_id"]


def _context(call, who: str, user_id: int, **body) -> dict:
    reply = call(who, "context", {"user_id": user_id, **body})
    assert reply["code"] == 0, reply
    data = reply["data"]
    assert data["chars_used"] == len(data["text"])
    return data


def _cited(data: dict) -> set[str]:
    return {m for item in data["items"] for m in item["memory_ids"]}


def _seed(call, user_id: int) -> dict[str, str]:
    return {text: _add(call, user_id, text, app_id="appA") for text in ANNA + OTHERS}


def test_the_profile_memories_and_entities_of_a_turn(call, user_id) -> None:
    ids = _seed(call, user_id)
    turns = [
        {"role": "user", "content": "I want to plan something nice."},
        {"role": "assistant", "content": "Sure, for whom?"},
        {"role": "user", "content": "Can my sister come along to my Spanish class on Tuesday?"},
    ]
    data = _context(call, "A", user_id, scope={"app_id": "appA"}, messages=turns, max_chars=450)
    kinds = [i["kind"] for i in data["items"]]
    assert set(kinds) == {"profile", "memory", "entity"}, data
    assert kinds == sorted(kinds, key=["profile", "memory", "entity"].index)  # sections
    text = data["text"]
    assert text.startswith("## About the user\n") and "\n\n## Relevant memories\n" in text
    assert "\n\n## People and things\n- Anna (person): " in text
    for item in data["items"]:
        assert f"- {item['text']}" in text.split("\n") and item["memory_ids"]
        assert set(item["memory_ids"]) <= set(ids.values())
    (anna,) = [i for i in data["items"] if i["kind"] == "entity"]
    assert anna["entity"] == "Anna" and anna["entity_id"].startswith("e_")
    cited = [m for i in data["items"] for m in i["memory_ids"]]
    assert len(cited) == len(set(cited))  # no memory stated twice
    # the recalled memories are about Anna: what recall answers for the same turn
    recalled = call("A", "recall", {"user_id": user_id, "query": turns[2]["content"],
                                    "scope": {"app_id": "appA"}})  # fmt: skip
    best = recalled["data"]["memories"][0]["memory_id"]
    assert best in _cited(data)
    # a query instead of the turns; neither: the profile (and no recall)
    asked = _context(call, "A", user_id, scope={"app_id": "appA"}, query="Where does Anna live?")
    assert ids["My sister Anna lives in Lyon."] in _cited(asked)
    plain = _context(call, "A", user_id, scope={"app_id": "appA"}, max_chars=300)
    assert {i["kind"] for i in plain["items"]} == {"profile"}


@pytest.mark.parametrize("budget", [1, 30, 80, 150, 300, 600, 1200, 2000, 20_000])
def test_the_whole_text_fits_the_budget(call, user_id, budget) -> None:
    _seed(call, user_id)
    turns = [{"role": "user", "content": "What do I do on Sundays with Anna and at work?"}]
    data = _context(call, "admin", user_id, scope={"app_id": "appA"}, messages=turns,
                    max_chars=budget)  # fmt: skip
    assert len(data["text"]) <= budget
    for item in data["items"]:
        assert item["text"] in data["text"]  # kept whole
    if budget >= 300:
        assert data["items"]
    if budget == 20_000:  # room for all: every memory said once
        assert len(_cited(data)) == len(ANNA + OTHERS)


def test_a_deleted_memory_is_absent_when_delete_returns(call, user_id) -> None:
    ids = _seed(call, user_id)
    lyon = ids["My sister Anna lives in Lyon."]
    body = {"scope": {"app_id": "appA"}, "query": "Where does my sister Anna live?"}
    assert lyon in _cited(_context(call, "A", user_id, **body))
    gone = call("A", "delete", {"user_id": user_id, "memory_id": lyon})
    assert gone["code"] == 0, gone
    after = _context(call, "A", user_id, **body)
    assert lyon not in _cited(after) and "lives in Lyon" not in after["text"], after
    assert after["items"]  # the rest is still there


def test_another_apps_or_tenants_facts_never_appear(call, user_id) -> None:
    a = _add(call, user_id, "I like green tea with jasmine.", app_id="appA")
    b = _add(call, user_id, "My colleague Boris drinks black coffee with sugar.", app_id="appB")
    g = _add(call, user_id, "I live in Lisbon near the river.", level="GLOBAL")
    ask = {"query": "Tea or coffee for Boris and me in Lisbon?", "max_chars": 2000}
    seen = _context(call, "A", user_id, scope={"app_id": "appA"}, **ask)
    assert _cited(seen) == {a, g} and "Boris" not in seen["text"] and "coffee" not in seen["text"]
    assert not [i for i in seen["items"] if i.get("entity") == "Boris"]
    only_global = _context(call, "A", user_id, **ask)
    assert _cited(only_global) == {g}
    no_global = _context(call, "A", user_id, scope={"app_id": "appA", "include_global": False}, **ask)  # fmt: skip
    assert _cited(no_global) == {a}
    theirs = _context(call, "B", user_id, scope={"app_id": "appB"}, **ask)
    assert _cited(theirs) == {b, g} and "jasmine" not in theirs["text"]
    assert _cited(_context(call, "admin", user_id, scope={"app_id": "appB"}, **ask)) == {b, g}
    refused = call("A", "context", {"user_id": user_id, "scope": {"app_id": "appB"}, **ask})
    assert refused["code"] == 40101 and "Boris" not in str(refused)
    other_tenant = _context(call, "T2", user_id, scope={"app_id": "appA"}, **ask)
    assert other_tenant == EMPTY


def test_recall_hits_are_counted_unless_count_hit_is_false(
    call, runtime, lifecycle, user_id
) -> None:
    tea = _add(call, user_id, "I drink green tea with jasmine every morning.", app_id="appA")
    body = {"scope": {"app_id": "appA"}, "query": "green tea with jasmine"}
    assert tea in _cited(_context(call, "A", user_id, count_hit=False, **body))
    assert tea in _cited(_context(call, "A", user_id, **body))  # counted

    def counted():
        got = runtime.memories.get(user_id, tea, tenant="default")
        return got if got is not None and got.recall_count else None

    got = wait_for(counted, timeout=40, what="the context's recall hit to be applied")
    # one partition per user, in order: had the first call counted, it would be in
    time.sleep(1.0)
    got = runtime.memories.get(user_id, tea, tenant="default")
    assert got is not None and got.recall_count == 1 and got.last_recalled_at is not None


def test_bad_bodies_answer_40001_and_a_switched_off_user_40301(call, user_id) -> None:
    _add(call, user_id, "I like green tea with jasmine.", app_id="appA")
    for bad in (
        {"max_chars": 0},
        {"max_chars": 20_001},
        {"max_chars": "100"},
        {"max_chars": 1.5},
        {"max_chars": True},
        {"query": ""},
        {"query": "   "},
        {"query": 3},
        {"query": "x" * 4097},
        {"messages": "hello"},
        {"messages": [{"role": "bot", "content": "hi"}]},
        {"messages": [{"role": "user"}]},
        {"messages": [{"role": "user", "content": "hi", "colour": "red"}]},
        {"messages": [{"role": "user", "content": "hi"}] * 51},
        {"count_hit": "false"},
        {"scope": {"app_id": 3}},
        {"scope": {"session_id": "s1"}},
        {"colour": "red"},
        {"user_id": "1"},
        {"user_id": -1},
    ):
        reply = call("admin", "context", {"user_id": user_id, **bad})
        assert reply["code"] == 40001, (bad, reply)
    # turns that say nothing: no recall, the profile only
    blank = [{"role": "user", "content": "  "}, {"role": "assistant", "content": ""}]
    data = _context(call, "admin", user_id, scope={"app_id": "appA"}, messages=blank)
    assert {i["kind"] for i in data["items"]} == {"profile"}
    off = call("admin", "switch", {"user_id": user_id, "enabled": False})
    assert off["code"] == 0, off
    for body in ({}, {"query": "tea"}, {"messages": [{"role": "user", "content": "tea"}]}):
        reply = call("admin", "context", {"user_id": user_id, "scope": {"app_id": "appA"}, **body})
        assert reply["code"] == 40301 and reply["data"] == EMPTY, reply


def test_the_same_context_from_the_hot_cache_and_from_the_store(call, runtime, user_id) -> None:
    _seed(call, user_id)
    body = {"scope": {"app_id": "appA"}, "max_chars": 800, "count_hit": False}
    runtime.cache.invalidate(user_id, tenant="default")
    assert runtime.cache.peek(user_id, tenant="default") is None
    from_store = _context(call, "A", user_id, **body)  # no query: nothing loads the user
    assert runtime.cache.peek(user_id, tenant="default") is None
    recalled = call(
        "A", "recall", {"user_id": user_id, "query": "Anna", "scope": {"app_id": "appA"}}
    )
    assert recalled["code"] == 0 and runtime.cache.peek(user_id, tenant="default") is not None
    assert _context(call, "A", user_id, **body) == from_store and from_store["items"]
