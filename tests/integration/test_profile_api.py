"""``POST /memory/v1/profile`` through HTTP against the real stack
(docs/api.md#profile, docs/architecture.md#the-profile): the scope a key may read
(another app's facts never), a deleted memory out of the profile when ``delete``
returns, a purged user's profile empty, bad budgets refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sinks import keystore
from tests.helpers.api_client import api_client

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)
PROFILE = "/memory/v1/profile"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    path = tmp_path_factory.mktemp("profile_keys") / "api_keys.json"

    def make(role="app", apps=(), grant=False):
        key, _ = keystore.create(path, "default", role, list(apps), global_grant=grant, now=NOW)
        return key

    return path, {"A": make(apps=["appA"]), "B": make(apps=["appB"]), "admin": make("admin")}


@pytest.fixture(scope="module")
def http(settings, stores, runtime, ingest, keys):
    s = settings.model_copy(update={"api_keys_file": keys[0]})
    with api_client(s, stores, runtime, client=("127.0.0.1", 40000)) as client:
        yield client


def _call(http, keys, who: str, path: str, body: dict) -> dict:
    headers = {"Authorization": f"Bearer {keys[1][who]}"}
    return http.post(path, json=body, headers=headers).json()


def _seed(http, keys, user_id: int) -> dict[str, str]:
    out = {}
    for name, extra in {
        "A": {"app_id": "appA", "level": "APP", "content": "I like green tea with jasmine"},
        "B": {"app_id": "appB", "level": "APP", "content": "I like black coffee with sugar"},
        "G": {"level": "GLOBAL", "content": "I live in Lisbon near the river"},
    }.items():
        body = _call(
            http, keys, "admin", "/memory/v1/add_structured", {"user_id": user_id, **extra}
        )
        assert body["code"] == 0, body
        out[name] = body["data"]["memory_id"]
    return out


def _cited(reply: dict) -> set[str]:
    assert reply["code"] == 0, reply
    return {m for item in reply["data"]["items"] for m in item["memory_ids"]}


def test_a_key_sees_its_apps_and_global_never_another_apps(http, keys, user_id):
    ids = _seed(http, keys, user_id)
    glob = {"user_id": user_id}
    app_a = {"user_id": user_id, "scope": {"app_id": "appA"}}
    app_b = {"user_id": user_id, "scope": {"app_id": "appB"}}
    assert _cited(_call(http, keys, "A", PROFILE, glob)) == {ids["G"]}
    assert _cited(_call(http, keys, "A", PROFILE, app_a)) == {ids["A"], ids["G"]}
    assert _cited(_call(http, keys, "B", PROFILE, app_b)) == {ids["B"], ids["G"]}
    no_global = {"user_id": user_id, "scope": {"app_id": "appA", "include_global": False}}
    assert _cited(_call(http, keys, "A", PROFILE, no_global)) == {ids["A"]}
    assert _cited(_call(http, keys, "admin", PROFILE, app_b)) == {ids["B"], ids["G"]}
    refused = _call(http, keys, "A", PROFILE, app_b)
    assert refused["code"] == 40101 and "black coffee" not in str(refused)
    reply = _call(http, keys, "A", PROFILE, app_a)["data"]
    texts = [i["text"] for i in reply["items"]]
    assert not any("coffee" in t for t in texts)
    assert reply["chars_used"] == sum(len(t) for t in texts)
    assert reply["updated_at"] is not None
    for item in reply["items"]:
        assert item["msg_ids"] == [] or all(isinstance(m, str) for m in item["msg_ids"])


def test_a_deleted_memory_leaves_the_profile_when_delete_returns(http, keys, user_id):
    ids = _seed(http, keys, user_id)
    body = {"user_id": user_id, "scope": {"app_id": "appA"}}
    assert ids["A"] in _cited(_call(http, keys, "A", PROFILE, body))
    gone = _call(http, keys, "A", "/memory/v1/delete", {"user_id": user_id, "memory_id": ids["A"]})
    assert gone["code"] == 0, gone
    after = _call(http, keys, "A", PROFILE, body)
    assert _cited(after) == {ids["G"]}
    assert "jasmine" not in str(after)


def test_a_purged_user_has_an_empty_profile(http, keys, user_id):
    _seed(http, keys, user_id)
    body = {"user_id": user_id, "scope": {"app_id": "appA"}}
    assert _cited(_call(http, keys, "admin", PROFILE, body))
    purged = _call(http, keys, "admin", "/memory/v1/purge", {"user_id": user_id})
    assert purged["code"] == 0, purged
    reply = _call(http, keys, "admin", PROFILE, body)
    assert reply["code"] == 0 and reply["data"] == {
        "items": [],
        "chars_used": 0,
        "updated_at": None,
    }


def test_the_budget_is_kept_and_bad_budgets_are_refused(http, keys, user_id):
    _seed(http, keys, user_id)
    for bad in (0, -1, 20_001, "100", 1.5, True, None):
        body = {"user_id": user_id, "max_chars": bad}
        assert _call(http, keys, "admin", PROFILE, body)["code"] == 40001, bad
    for extra in ({"scope": {"app_id": 3}}, {"entity": ""}, {"colour": "red"}):
        assert _call(http, keys, "admin", PROFILE, {"user_id": user_id, **extra})["code"] == 40001
    small = {"user_id": user_id, "scope": {"app_id": "appA"}, "max_chars": 35}
    reply = _call(http, keys, "admin", PROFILE, small)["data"]
    assert 0 < reply["chars_used"] <= 35 and len(reply["items"]) == 1
    tiny = {"user_id": user_id, "scope": {"app_id": "appA"}, "max_chars": 5}
    assert _call(http, keys, "admin", PROFILE, tiny)["data"]["items"] == []


def test_an_unknown_entity_gives_an_empty_profile(http, keys, user_id):
    _seed(http, keys, user_id)
    body = {"user_id": user_id, "scope": {"app_id": "appA"}, "entity": "Nobody-At-All"}
    reply = _call(http, keys, "admin", PROFILE, body)
    assert reply["code"] == 0 and reply["data"]["items"] == []


def test_entity_narrows_the_profile_to_the_memories_naming_it(http, keys, user_id):
    said = {}
    for text in ("My sister Anna lives in Lyon", "Every Sunday Anna plays chess with me",
                 "I like green tea with jasmine"):  # fmt: skip
        body = {"user_id": user_id, "level": "GLOBAL", "content": text}
        reply = _call(http, keys, "admin", "/memory/v1/add_structured", body)
        assert reply["code"] == 0, reply
        said[text] = reply["data"]["memory_id"]
    anna = {said["My sister Anna lives in Lyon"], said["Every Sunday Anna plays chess with me"]}
    by_name = _call(http, keys, "A", PROFILE, {"user_id": user_id, "entity": "anna"})
    assert _cited(by_name) == anna
    assert {i["entity"] for i in by_name["data"]["items"]} == {"Anna"}
    listed = _call(http, keys, "A", "/memory/v1/entities", {"user_id": user_id})
    eid = next(e["entity_id"] for e in listed["data"]["entities"] if e["name"] == "Anna")
    by_id = _call(http, keys, "A", PROFILE, {"user_id": user_id, "entity": eid})
    assert _cited(by_id) == anna


def test_switches_hold_for_the_profile(http, keys, user_id):
    ids = _seed(http, keys, user_id)
    body = {"user_id": user_id, "scope": {"app_id": "appA"}}
    off = {"user_id": user_id, "app_id": "appA", "enabled": False}
    assert _call(http, keys, "A", "/memory/v1/switch", off)["code"] == 0
    assert _cited(_call(http, keys, "A", PROFILE, body)) == {ids["G"]}
    everything = {"user_id": user_id, "enabled": False}
    assert _call(http, keys, "admin", "/memory/v1/switch", everything)["code"] == 0
    reply = _call(http, keys, "A", PROFILE, body)
    assert reply["code"] == 40301 and reply["data"]["items"] == []
