"""Management, privacy and session endpoints through HTTP against the real stores."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from core.derived import is_profile_id, profile_id
from memstream.schemas.enums import Status
from memstream.schemas.tenants import DEFAULT_TENANT

pytestmark = pytest.mark.integration


def _add(api, user_id: int, content: str, **extra) -> str:
    body = api.post(
        "/memory/v1/add_structured", json={"user_id": user_id, "content": content, **extra}
    ).json()
    assert body["code"] == 0, body
    return body["data"]["memory_id"]


def _recall_ids(api, user_id: int, query: str, **extra) -> list[str]:
    body = api.post(
        "/memory/v1/recall",
        json={"user_id": user_id, "query": query, "min_relevance": 0, "top_k": 50, **extra},
    ).json()
    assert body["code"] == 0, body
    return [m["memory_id"] for m in body["data"]["memories"]]


def test_update_content_reembeds_and_meta_does_not(api, runtime, ingest, user_id) -> None:
    mid = _add(api, user_id, "I drink coffee every morning")
    before = runtime.memories.vectors([mid])[mid]
    meta = api.post(
        "/memory/v1/update",
        json={
            "user_id": user_id,
            "memory_id": mid,
            "is_important": True,
            "custom_tags": {"topic": "food"},
        },
    ).json()
    assert meta["code"] == 0 and meta["data"]["reembedded"] is False, meta
    assert (runtime.memories.vectors([mid])[mid] == before).all()
    stored = runtime.memories.get(user_id, mid, tenant="default")
    assert stored.is_important and stored.custom_tags == {"topic": "food"}

    text = api.post(
        "/memory/v1/update",
        json={"user_id": user_id, "memory_id": mid, "content": "I switched from coffee to tea"},
    ).json()
    assert text["code"] == 0 and text["data"]["reembedded"] is True
    stored = runtime.memories.get(user_id, mid, tenant="default")
    assert stored.content == "I switched from coffee to tea" and stored.is_important
    assert not (runtime.memories.vectors([mid])[mid] == before).all()
    assert mid in _recall_ids(api, user_id, "tea")

    history = api.post("/memory/v1/history", json={"user_id": user_id, "memory_id": mid}).json()
    ops = [c["op_type"] for c in history["data"]["changes"]]
    assert ops == ["ADD", "UPDATE", "UPDATE"]
    assert history["data"]["changes"][-1]["content_before"] == "I drink coffee every morning"


def test_errors_unknown_other_users_and_bad_params(api, ingest, user_id) -> None:
    mid = _add(api, user_id, "I have a motorbike")
    other = user_id + 7
    for path, body in [
        ("/memory/v1/update", {"user_id": user_id, "memory_id": "m_nope", "content": "x"}),
        ("/memory/v1/update", {"user_id": other, "memory_id": mid, "content": "hijack"}),
        ("/memory/v1/delete", {"user_id": other, "memory_id": mid}),
        ("/memory/v1/history", {"user_id": other, "memory_id": mid}),
    ]:
        assert api.post(path, json=body).json()["code"] == 40401, (path, body)
    for path, body in [
        ("/memory/v1/update", {"user_id": user_id, "memory_id": mid}),
        ("/memory/v1/update", {"user_id": -1, "memory_id": mid, "content": "x"}),
        ("/memory/v1/batch_delete", {"user_id": user_id}),
        ("/memory/v1/change_log", {"user_id": user_id, "page_size": 0}),
        ("/memory/v1/switch", {"user_id": user_id}),
        ("/memory/v1/session/close", {"user_id": user_id}),
    ]:
        assert api.post(path, json=body).json()["code"] == 40001, (path, body)
    assert _recall_ids(api, user_id, "motorbike") == [mid]


def test_delete_leaves_recall_at_once_and_batch_delete_is_one_operation(
    api, runtime, ingest, user_id
) -> None:
    ids = [
        _add(api, user_id, t, app_id="garden")
        for t in ("I grow tomatoes", "I grow basil", "I grow peppers")
    ]
    keep = _add(api, user_id, "I grow lemons")
    resp = api.post("/memory/v1/delete", json={"user_id": user_id, "memory_id": ids[0]}).json()
    assert resp["code"] == 0 and resp["data"]["deleted"] == 1
    assert ids[0] not in _recall_ids(
        api, user_id, "tomatoes", scope={"app_id": "garden", "include_global": True}
    )
    batch = api.post(
        "/memory/v1/batch_delete", json={"user_id": user_id, "scope": {"app_id": "garden"}}
    ).json()
    assert batch["code"] == 0 and sorted(batch["data"]["memory_ids"]) == sorted(ids[1:])
    assert _recall_ids(api, user_id, "grow", scope={"app_id": "garden"}) == [keep]
    deletes = runtime.stores.clickhouse.query(
        "SELECT DISTINCT task_id FROM memstream.memory_changelog FINAL "
        "WHERE user_id = {u:UInt64} AND op_type = 'DELETE'",
        {"u": user_id},
    )
    assert len(deletes) == 2  # the batch is one command, not N racing deletes
    assert runtime.memories.get(user_id, ids[1], tenant="default").status is Status.DELETED


def test_change_log_pages_and_user_list_groups(api, ingest, user_id) -> None:
    for i in range(5):
        _add(api, user_id, f"I visited museum number {i}", app_id="travel")
    _add(api, user_id, "My blood type is O positive")
    _add(api, user_id, "I am in a meeting now", app_id="travel", level="SESSION", session_id="s1")
    # The log also holds the stored profiles' versions (docs/architecture.md#the-profile),
    # as many as the plans that changed: the pages are walked to their end.
    pages = []
    while not pages or pages[-1]["has_more"]:
        body = {"user_id": user_id, "page_size": 4, "page": len(pages) + 1}
        pages.append(api.post("/memory/v1/change_log", json=body).json()["data"])
    items = [c for page in pages for c in page["items"]]
    assert len(pages) > 1 and all(len(page["items"]) == 4 for page in pages[:-1])
    assert all(page["total"] == len(items) for page in pages)
    assert len({c["change_id"] for c in items}) == len(items)
    assert len([c for c in items if not is_profile_id(c["memory_id"])]) == 7
    profiles = {profile_id(DEFAULT_TENANT, user_id, app) for app in (None, "travel")}
    assert {c["memory_id"] for c in items if is_profile_id(c["memory_id"])} == profiles
    scoped = api.post("/memory/v1/change_log", json={"user_id": user_id, "level": "GLOBAL"})
    scoped_items = scoped.json()["data"]["items"]
    assert len([c for c in scoped_items if not is_profile_id(c["memory_id"])]) == 1
    listed = api.post("/memory/v1/user/list", json={"user_id": user_id}).json()["data"]
    groups = listed["memories"]
    assert len(groups["GLOBAL"]) == 1 and len(groups["APP"]["travel"]) == 5
    assert len(groups["SESSION"]["s1"]) == 1 and listed["total"] == 7
    assert {m["memory_id"] for m in listed["profiles"]} == profiles


def test_purge_switch_and_export(api, runtime, ingest, user_id) -> None:
    jp = _add(api, user_id, "I am learning Japanese", app_id="lang")
    _add(api, user_id, "My passport number ends with 42")
    off = api.post(
        "/memory/v1/switch", json={"user_id": user_id, "app_id": "lang", "enabled": False}
    ).json()
    assert off["code"] == 0
    assert jp not in _recall_ids(api, user_id, "Japanese", scope={"app_id": "lang"})
    assert (
        api.post(
            "/memory/v1/switch", json={"user_id": user_id, "app_id": "lang", "enabled": True}
        ).json()["code"]
        == 0
    )
    assert jp in _recall_ids(api, user_id, "Japanese", scope={"app_id": "lang"})

    started = api.post("/memory/v1/export", json={"user_id": user_id}).json()["data"]
    export_id = started["export_id"]
    deadline = time.monotonic() + 30
    while (st := api.get(f"/memory/v1/export/{export_id}").json()["data"])["status"] != "done":
        assert time.monotonic() < deadline and st["status"] == "running", st
        time.sleep(0.1)
    lines = [json.loads(x) for x in api.get(st["url"]).text.splitlines()]
    listed = api.post(
        "/memory/v1/user/list", json={"user_id": user_id, "include_deleted": True}
    ).json()["data"]
    flat = [m for m in listed["memories"]["GLOBAL"]] + [
        m for group in ("APP", "SESSION") for ms in listed["memories"][group].values() for m in ms
    ]
    log = api.post("/memory/v1/change_log", json={"user_id": user_id}).json()["data"]["items"]
    # the export carries the stored profiles too, listed apart (docs/architecture.md#the-profile)
    memories = [x for x in lines if x["type"] == "memory"]
    assert sorted((m["memory_id"], m["content"]) for m in flat + listed["profiles"]) == sorted(
        (x["memory_id"], x["content"]) for x in memories
    )
    profiles = {profile_id(DEFAULT_TENANT, user_id, app) for app in (None, "lang")}
    assert {x["memory_id"] for x in memories if is_profile_id(x["memory_id"])} == profiles
    assert [c["change_id"] for c in log] == [x["change_id"] for x in lines if x["type"] == "change"]
    short = api.get(f"/memory/v1/export/{export_id}", params={"link_ttl_s": 1}).json()["data"]
    time.sleep(2.1)
    assert api.get(short["url"]).json()["code"] == 40101
    assert api.get(st["url"].replace("sig=", "sig=0")).json()["code"] == 40101

    purge = api.post("/memory/v1/purge", json={"user_id": user_id}).json()
    assert purge["code"] == 0 and purge["data"]["deleted"] == 2
    due = datetime.fromisoformat(purge["data"]["physical_removal_due"])
    assert due - datetime.now(UTC) > timedelta(days=29)
    assert _recall_ids(api, user_id, "passport") == []
    listed = api.post("/memory/v1/user/list", json={"user_id": user_id}).json()["data"]
    assert listed["total"] == 0


def test_session_close_promotes_drops_and_leaves_a_note(api, runtime, ingest, user_id) -> None:
    s = {"app_id": "tutor", "level": "SESSION", "session_id": "lesson-1"}
    keep = _add(api, user_id, "I struggle with irregular verbs", is_important=True, **s)
    named = _add(api, user_id, "I prefer examples from football", **s)
    drop = _add(api, user_id, "I am sitting in a cafe right now", **s)
    resp = api.post(
        "/memory/v1/session/close",
        json={
            "user_id": user_id,
            "app_id": "tutor",
            "session_id": "lesson-1",
            "promote_ids": [named],
            "pending": True,
        },
    ).json()
    assert resp["code"] == 0, resp
    data = resp["data"]
    assert sorted(data["promoted"]) == sorted([keep, named]) and data["dropped"] == [drop]
    by_id = {m.memory_id: m for m in runtime.memories.load(user_id, tenant="default")}
    assert by_id[keep].level == "APP" and by_id[keep].session_id is None
    assert by_id[drop].status is Status.DELETED
    note = by_id[data["pending_memory_id"]]
    assert note.expire_at - datetime.now(UTC) > timedelta(hours=23)
    assert set(_recall_ids(api, user_id, "verbs football", scope={"app_id": "tutor"})) >= {
        keep,
        named,
    }
