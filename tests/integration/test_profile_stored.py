"""The stored profile (docs/architecture.md#the-profile) through HTTP against the real
stack: a memory of its own kind written by the writer in the batch of every change,
listed by ``user/list`` and ``history``, never recalled, never edited by hand, counted
by no capacity; a delete takes a memory out of it and blanks the profile's change rows
that cited it when ``delete`` returns; a purge leaves no words of it."""

from __future__ import annotations

import pytest

from core.derived import profile_id
from memstream.schemas.tenants import DEFAULT_TENANT
from tests.helpers.api_client import api_client

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def http(settings, stores, runtime, ingest):
    with api_client(settings, stores, runtime, client=("127.0.0.1", 40000)) as client:
        yield client


def _post(http, path: str, body: dict) -> dict:
    reply = http.post(f"/memory/v1/{path}", json=body).json()
    return reply


def _add(http, user_id: int, content: str, **extra) -> str:
    reply = _post(http, "add_structured", {"user_id": user_id, "content": content, **extra})
    assert reply["code"] == 0, reply
    return reply["data"]["memory_id"]


def _profiles(http, user_id: int, deleted: bool = False) -> list[dict]:
    body = {"user_id": user_id, "page_size": 200, "include_deleted": deleted}
    reply = _post(http, "user/list", body)
    assert reply["code"] == 0, reply
    groups = reply["data"]["memories"]
    listed = [*groups["GLOBAL"], *(m for g in groups["APP"].values() for m in g)]
    assert all(m["mem_type"] != "PROFILE" for m in listed)  # apart from the memories
    assert reply["data"]["total"] == len(listed)
    return reply["data"]["profiles"]


def test_the_profile_is_a_memory_listed_with_its_history_and_never_recalled(http, user_id):
    tea = _add(http, user_id, "Drinks jasmine green tea every morning")
    _add(http, user_id, "Works as a nurse at the Lisbon general hospital")
    [stored] = _profiles(http, user_id)
    assert stored["memory_id"] == profile_id(DEFAULT_TENANT, user_id, None)
    assert stored["level"] == "GLOBAL" and stored["status"] == "ACTIVE"
    assert "jasmine" in stored["content"] and "nurse" in stored["content"]
    profile = _post(http, "profile", {"user_id": user_id})["data"]
    assert [i["text"] for i in profile["items"]] == stored["content"].split("\n")
    assert tea in {m for i in profile["items"] for m in i["memory_ids"]}
    history = _post(http, "history", {"user_id": user_id, "memory_id": stored["memory_id"]})
    ops = [c["op_type"] for c in history["data"]["changes"]]
    assert ops[:2] == ["ADD", "UPDATE"], ops
    recalled = _post(
        http, "recall", {"user_id": user_id, "query": "jasmine tea nurse", "top_k": 10}
    )
    assert recalled["code"] == 0, recalled
    assert all(m["mem_type"] != "PROFILE" for m in recalled["data"]["memories"])
    assert len(recalled["data"]["memories"]) == 2


def test_a_delete_blanks_the_profile_change_rows_that_cited_it(http, user_id):
    tea = _add(http, user_id, "Drinks jasmine green tea every morning")
    _add(http, user_id, "Plays the cello in a community orchestra")
    pid = profile_id(DEFAULT_TENANT, user_id, None)
    gone = _post(http, "delete", {"user_id": user_id, "memory_id": tea})
    assert gone["code"] == 0, gone
    profile = _post(http, "profile", {"user_id": user_id})
    assert "jasmine" not in str(profile) and "cello" in str(profile)
    [stored] = _profiles(http, user_id)
    assert "jasmine" not in stored["content"]
    history = _post(http, "history", {"user_id": user_id, "memory_id": pid})["data"]["changes"]
    assert "jasmine" not in str(history)
    assert history and all(c["sanitized"] for c in history)  # each held the tea's words
    _add(http, user_id, "Bakes sourdough bread on Sundays")
    history = _post(http, "history", {"user_id": user_id, "memory_id": pid})["data"]["changes"]
    fresh = [c for c in history if not c["sanitized"]]
    assert len(fresh) == 1 and "cello" in fresh[0]["content_before"]
    assert "sourdough" in fresh[0]["content_after"]


def test_the_profile_is_not_edited_by_hand(http, user_id):
    _add(http, user_id, "Keeps bees on a rooftop in Porto")
    pid = profile_id(DEFAULT_TENANT, user_id, None)
    upd = _post(http, "update", {"user_id": user_id, "memory_id": pid, "content": "anything"})
    assert upd["code"] == 40001 and "derived" in upd["msg"]
    rm = _post(http, "delete", {"user_id": user_id, "memory_id": pid})
    assert rm["code"] == 40001, rm
    made = _post(
        http, "add_structured", {"user_id": user_id, "content": "x y", "mem_type": "PROFILE"}
    )
    assert made["code"] == 40001, made
    assert "bees" in _profiles(http, user_id)[0]["content"]


def test_an_app_profile_reads_its_app_and_global_and_retires_when_empty(http, user_id):
    _add(http, user_id, "Lives in Lisbon near the river", level="GLOBAL")
    app = _add(http, user_id, "Orders oat milk lattes", app_id="cafe", level="APP")
    ids = {p["memory_id"]: p for p in _profiles(http, user_id)}
    mine = ids[profile_id(DEFAULT_TENANT, user_id, "cafe")]
    assert "oat milk" in mine["content"] and "Lisbon" in mine["content"]
    assert "oat milk" not in ids[profile_id(DEFAULT_TENANT, user_id, None)]["content"]
    assert _post(http, "delete", {"user_id": user_id, "memory_id": app})["code"] == 0
    # an app without memories of its own has no profile of its own: GLOBAL's stands
    live = {p["memory_id"] for p in _profiles(http, user_id)}
    assert live == {profile_id(DEFAULT_TENANT, user_id, None)}
    reply = _post(http, "profile", {"user_id": user_id, "scope": {"app_id": "cafe"}})
    assert "Lisbon" in str(reply) and "oat milk" not in str(reply)


def test_a_purge_leaves_no_profile_words(http, user_id):
    _add(http, user_id, "Collects vintage Leica cameras")
    assert _post(http, "purge", {"user_id": user_id})["code"] == 0
    assert _profiles(http, user_id) == []
    retired = _profiles(http, user_id, deleted=True)
    assert retired and all(p["content"] == "" and p["status"] == "DELETED" for p in retired)
    pid = profile_id(DEFAULT_TENANT, user_id, None)
    history = _post(http, "history", {"user_id": user_id, "memory_id": pid})
    assert "Leica" not in str(history)
    profile = _post(http, "profile", {"user_id": user_id})
    assert profile["data"]["items"] == []
