"""The entity view through HTTP against the real stack (docs/api.md#entities): memories
written through the API (``add_structured``, and ``add`` through Kafka for a
supersession) name entities; ``entities`` lists them, ``entity`` shows one with its
summary and its whole timeline; every key sees only what it may read."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)
BEFORE = datetime(2023, 3, 1, 9, 0, tzinfo=UTC)
AFTER = datetime(2023, 4, 12, 9, 0, tzinfo=UTC)


@pytest.fixture
def call(http, keys):
    def send(who: str, path: str, body: dict | None = None, method: str = "POST") -> dict:
        headers = {"Authorization": f"Bearer {keys[1][who]}"}
        return http.request(method, f"/memory/v1/{path}", json=body, headers=headers).json()

    return send


def _add(call, user_id: int, content: str, who: str = "admin", **extra) -> str:
    body = call(who, "add_structured", {"user_id": user_id, "content": content, **extra})
    assert body["code"] == 0, body
    return body["data"]["memory_id"]


def _entities(call, who: str, user_id: int, **extra) -> dict[str, dict]:
    body = call(who, "entities", {"user_id": user_id, **extra})
    assert body["code"] == 0, body
    return {e["name"]: e for e in body["data"]["entities"]}


def _turn(call, user_id: int, text: str, ts: datetime, msg_id: str) -> dict:
    turn = {"role": "user", "name": "Lin", "content": text, "msg_id": msg_id, "ts": ts.isoformat()}
    body = call("admin", "add", {"user_id": user_id, "app_id": "appA", "messages": [turn]})
    assert body["code"] == 0, body
    task_id = body["data"]["task_id"]

    def done():
        got = call("admin", f"tasks/{task_id}", method="GET").get("data")
        return got if got and got["status"] in ("done", "failed") else None

    status = wait_for(done, what=task_id)
    assert status["status"] == "done", status
    return status


def test_entities_listed_and_one_shown_by_name_and_by_id(call, user_id) -> None:
    m1 = _add(call, user_id, "My sister Anna lives in Lyon.")
    m2 = _add(call, user_id, "Every Sunday Anna plays chess with me.")
    _add(call, user_id, "I like green tea.")  # names no entity

    body = call("admin", "entities", {"user_id": user_id})
    assert body["code"] == 0, body
    page = body["data"]
    assert [e["name"] for e in page["entities"]] == ["Anna", "Lyon"], page  # most memories first
    assert (page["total"], page["page"], page["has_more"]) == (2, 1, False)
    anna, lyon = page["entities"]
    assert (anna["type"], anna["memories"], lyon["type"], lyon["memories"]) == (
        "person",
        2,
        "place",
        1,
    )
    assert anna["entity_id"] != lyon["entity_id"] and anna["last_seen"]
    for type_ in ("Place", "places", "location"):  # any case, a declared type's spellings
        only = call("admin", "entities", {"user_id": user_id, "type": type_})["data"]
        assert [e["name"] for e in only["entities"]] == ["Lyon"], (type_, only)
    second = call("admin", "entities", {"user_id": user_id, "page": 2, "page_size": 1})["data"]
    assert [e["name"] for e in second["entities"]] == ["Lyon"] and not second["has_more"]

    for selector in ({"name": "anna"}, {"name": " ANNA's "}, {"entity_id": anna["entity_id"]}):
        shown = call("admin", "entity", {"user_id": user_id, **selector})
        assert shown["code"] == 0, (selector, shown)
        data = shown["data"]
        assert data["entity"] == anna, data
        assert "entities" not in data  # one match
        assert [m["memory_id"] for m in data["memories"]] == [m1, m2]  # time order
        assert all(m["status"] == "ACTIVE" for m in data["memories"])
        assert {"entity_id": anna["entity_id"], "name": "Anna", "type": "person"} in data[
            "memories"
        ][0]["entities"]
        assert data["summary"], data  # what is true of Anna now, citing exactly its memories
        cited = {mid for item in data["summary"] for mid in item["memory_ids"]}
        assert cited and cited <= {m1, m2}, data["summary"]
    # a memory's answer elsewhere (user/list) carries its entities too
    listed = call("admin", "user/list", {"user_id": user_id})["data"]["memories"]["GLOBAL"]
    names = {m["memory_id"]: {e["name"] for e in m["entities"]} for m in listed}
    assert names[m1] == {"Anna", "Lyon"}, names


def test_a_superseded_memory_stays_on_its_entity_timeline(call, user_id) -> None:
    _turn(call, user_id, "I live in Shenzhen now", BEFORE, "c0")
    status = _turn(call, user_id, "We moved from Shenzhen to Guangzhou", AFTER, "c1")
    assert status["counts"]["superseded"] == 1, status

    shown = call("admin", "entity", {"user_id": user_id, "name": "shenzhen"})
    assert shown["code"] == 0, shown
    data = shown["data"]
    old, new = data["memories"]  # lived in Shenzhen, then moved: both shown, in time order
    assert old["status"] == "SUPERSEDED" and old["superseded_by"] == new["memory_id"], old
    assert old["invalid_at"].startswith("2023-04-12") and old["source"]["msg_id"] == "c0"
    assert new["status"] == "ACTIVE" and new["source"]["msg_id"] == "c1"
    assert data["entity"]["memories"] == 1  # only what is true now counts
    cited = {mid for item in data["summary"] for mid in item["memory_ids"]}
    assert old["memory_id"] not in cited  # the summary says only what is true now
    guangzhou = call("admin", "entity", {"user_id": user_id, "name": "Guangzhou"})["data"]
    assert [m["memory_id"] for m in guangzhou["memories"]] == [new["memory_id"]]


def test_each_key_sees_only_the_entities_it_may_read(call, user_id) -> None:
    _add(call, user_id, "My colleague Marco works at Acme.", app_id="appA", level="APP")
    _add(call, user_id, "My friend Sofia lives in Porto.", app_id="appB", level="APP")
    _add(call, user_id, "My brother Tom lives in Oslo.", level="GLOBAL")

    everything = _entities(call, "admin", user_id)
    assert set(everything) == {"Marco", "Acme", "Sofia", "Porto", "Tom", "Oslo"}, everything
    assert set(_entities(call, "A", user_id)) == {"Marco", "Acme", "Tom", "Oslo"}
    assert set(_entities(call, "B", user_id)) == {"Sofia", "Porto", "Tom", "Oslo"}
    # a scope narrows as recall's does: the app's own, with or without GLOBAL
    app_only = {"app_id": "appA", "include_global": False}
    assert set(_entities(call, "A", user_id, scope=app_only)) == {"Marco", "Acme"}
    assert set(_entities(call, "admin", user_id, scope={})) == {"Tom", "Oslo"}  # GLOBAL only
    assert call("A", "entities", {"user_id": user_id, "scope": {"app_id": "appB"}})["code"] == (
        40101
    )

    sofia = everything["Sofia"]["entity_id"]
    for selector in ({"name": "Sofia"}, {"entity_id": sofia}):  # as if it did not exist
        got = call("A", "entity", {"user_id": user_id, **selector})
        assert got["code"] == 40401, (selector, got)
    tom = call("A", "entity", {"user_id": user_id, "name": "tom"})
    assert tom["code"] == 0 and tom["data"]["entity"]["name"] == "Tom", tom
    assert call("B", "entity", {"user_id": user_id, "entity_id": sofia})["code"] == 0

    # another tenant's user of the same id is another person: nothing of these
    assert _entities(call, "T2", user_id) == {}
    assert call("T2", "entity", {"user_id": user_id, "name": "Tom"})["code"] == 40401


def test_deleted_and_purged_memories_name_no_entity(call, user_id) -> None:
    keep = _add(call, user_id, "My brother Tom lives in Oslo.")
    gone = _add(call, user_id, "My friend Sofia lives in Porto.")
    assert call("admin", "delete", {"user_id": user_id, "memory_id": gone})["code"] == 0
    assert set(_entities(call, "admin", user_id)) == {"Tom", "Oslo"}  # at once
    assert call("admin", "entity", {"user_id": user_id, "name": "Sofia"})["code"] == 40401

    assert keep and call("admin", "purge", {"user_id": user_id})["code"] == 0
    assert _entities(call, "admin", user_id) == {}
    assert call("admin", "entity", {"user_id": user_id, "name": "Tom"})["code"] == 40401


def test_two_entities_of_one_name_are_both_answered(call, user_id) -> None:
    # two apps' Annas: resolution never joins across apps, so two entities, two ids
    _add(call, user_id, "My sister Anna lives in Lyon.", app_id="appA", level="APP")
    _add(call, user_id, "Every Sunday Anna plays chess with me.", app_id="appA", level="APP")
    _add(call, user_id, "My coworker Anna moved to Berlin.", app_id="appB", level="APP")
    views = call("admin", "entities", {"user_id": user_id})["data"]["entities"]
    annas = [e for e in views if e["name"] == "Anna"]
    assert [e["memories"] for e in annas] == [2, 1], views

    shown = call("admin", "entity", {"user_id": user_id, "name": "anna"})["data"]
    assert shown["entities"] == annas  # every match with its id, the first shown
    assert shown["entity"] == annas[0] and len(shown["memories"]) == 2
    other = call("admin", "entity", {"user_id": user_id, "entity_id": annas[1]["entity_id"]})
    assert [m["app_id"] for m in other["data"]["memories"]] == ["appB"], other
    # an app key sees its own Anna only: one match, no list
    only = call("B", "entity", {"user_id": user_id, "name": "Anna"})["data"]
    assert only["entity"]["entity_id"] == annas[1]["entity_id"] and "entities" not in only


def test_another_name_of_an_entity_finds_it(call, user_id) -> None:
    _add(call, user_id, "My friend Melanie paints landscapes.")
    _add(call, user_id, "Yesterday Mel went hiking with me.")
    views = _entities(call, "admin", user_id)
    assert set(views) == {"Melanie"} and views["Melanie"]["aliases"] == ["Mel"], views
    shown = call("admin", "entity", {"user_id": user_id, "name": "MEL"})
    assert shown["code"] == 0 and shown["data"]["entity"]["name"] == "Melanie", shown
    assert len(shown["data"]["memories"]) == 2


def test_bad_requests(call, user_id) -> None:
    _add(call, user_id, "My brother Tom lives in Oslo.")
    for body in (
        {"user_id": user_id},  # neither entity_id nor name
        {"user_id": user_id, "name": "Tom", "entity_id": "e_1"},  # both
        {"user_id": user_id, "name": "   "},
        {"user_id": user_id, "name": "Tom", "max_chars": 0},
        {"user_id": user_id, "name": "Tom", "extra": 1},
        {"user_id": "7", "name": "Tom"},
    ):
        assert call("admin", "entity", body)["code"] == 40001, body
    for body in (
        {"user_id": user_id, "page_size": 0},
        {"user_id": user_id, "page": 0},
        {"user_id": user_id, "type": ""},
        {"user_id": user_id, "scope": {"app_id": "a\nb"}},
    ):
        assert call("admin", "entities", body)["code"] == 40001, body
    for body in ({"name": "Nobody"}, {"entity_id": "e_nope"}):
        got = call("admin", "entity", {"user_id": user_id, **body})
        assert got["code"] == 40401 and "no entity" in got["msg"], got
    assert call("admin", "entities", {"user_id": user_id + 1})["data"]["entities"] == []
