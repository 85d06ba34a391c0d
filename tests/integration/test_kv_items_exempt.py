"""Key-value items are exempt from what shapes the ordinary memories
(docs/architecture.md#key-value-items): no decay, expiry or eviction in a lifecycle pass,
no dedup against a memory of the same text, no capacity, never recalled, never in the
profile; and they are the user's data: delete by id, purge, user/list, not updatable."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import numpy as np
import pytest

from dataflows.lifecycle.scan import run_pass
from dataflows.lifecycle.submit import KafkaVia
from memstream.schemas.enums import Status
from ops.transfer_cmd import write_of
from tests.helpers.lifecycle import T0, record, seed

pytestmark = pytest.mark.integration

V1 = "/memory/v1"
TEXT = "The user is allergic to peanuts"


def put(api, user_id, key, value, **extra) -> dict:
    body = {"user_id": user_id, "namespace": ["mem"], "key": key, "value": value, **extra}
    answer = api.post(f"{V1}/items/put", json=body).json()
    assert answer["code"] == 0, answer
    return answer["data"]


def got(api, user_id, key, **extra) -> dict:
    body = {"user_id": user_id, "namespace": ["mem"], "key": key, **extra}
    return api.post(f"{V1}/items/get", json=body).json()


def test_a_lifecycle_pass_far_ahead_leaves_items_alone(api, runtime, ingest, user_id) -> None:
    (ordinary,) = seed(runtime, record(user_id, "I like green tea"))
    item = put(api, user_id, "tea", {"text": "I like green tea"})["memory_id"]
    summary = run_pass(
        runtime, T0 + timedelta(days=800), KafkaVia(runtime.stores, 30), users=[user_id]
    )
    assert summary["failed_commands"] == 0 and summary["archived"] == 1, summary
    assert runtime.memories.get(user_id, ordinary.memory_id, tenant="default").status is (
        Status.ARCHIVED
    )
    stored = runtime.memories.get(user_id, item, tenant="default")
    assert stored.status is Status.ACTIVE and stored.weight == 1.0
    assert got(api, user_id, "tea")["data"]["item"]["value"] == {"text": "I like green tea"}


def test_items_are_not_recalled_deduplicated_counted_or_profiled(
    api, runtime, ingest, user_id
) -> None:
    held = runtime.settings
    runtime.settings = held.model_copy(
        update={"app_overrides": {"cap": {"capacity_per_app": 2, "consolidation_enabled": False}}}
    )
    try:
        items = [put(api, user_id, f"k{i}", {"text": TEXT}, app_id="cap") for i in range(4)]
        # the same words as an ordinary memory: another memory, no duplicate of the items
        first = api.post(
            f"{V1}/add_structured", json={"user_id": user_id, "app_id": "cap", "content": TEXT}
        ).json()
        assert first["code"] == 0 and first["data"]["duplicate"] is False, first
        second = api.post(
            f"{V1}/add_structured",
            json={"user_id": user_id, "app_id": "cap", "content": "I live in Lyon"},
        ).json()
        assert second["data"]["evicted"] == 0, second  # the 4 items take no capacity
    finally:
        runtime.settings = held
    # an item with the text of an ordinary memory as its whole value: its own memory
    twin = put(api, user_id, "twin", {"t": "I live in Lyon"}, app_id="cap", index=["t"])
    assert twin["op"] == "put"

    item_ids = {i["memory_id"] for i in items} | {twin["memory_id"]}
    recall = {"user_id": user_id, "query": "peanut allergy", "min_relevance": 0}
    recall["scope"] = {"app_id": "cap"}
    found = api.post(f"{V1}/recall", json=recall).json()
    ids = {m["memory_id"] for m in found["data"]["memories"]}
    assert first["data"]["memory_id"] in ids and not ids & item_ids, found
    asked = {**recall, "filter": {"mem_type": ["ITEM"]}}  # even when asked for by kind
    typed = api.post(f"{V1}/recall", json=asked).json()
    assert typed["code"] == 0 and typed["data"]["memories"] == [], typed

    turn = [{"role": "user", "content": "what am I allergic to?"}]
    ctx = {"user_id": user_id, "scope": {"app_id": "cap"}, "messages": turn}
    context = api.post(f"{V1}/context", json=ctx).json()
    cited = {m for i in context["data"]["items"] for m in i["memory_ids"]}
    assert cited and not cited & item_ids, context
    profile = api.post(f"{V1}/profile", json={"user_id": user_id, "scope": {"app_id": "cap"}})
    cited = {m for i in profile.json()["data"]["items"] for m in i["memory_ids"]}
    assert cited and not cited & item_ids, profile.json()
    listed = api.post(f"{V1}/user/list", json={"user_id": user_id}).json()["data"]
    kinds = {m["memory_id"]: m["mem_type"] for m in listed["memories"]["APP"]["cap"]}
    assert {kinds[i] for i in item_ids} == {"ITEM"}


def test_delete_by_id_update_refused_and_purge(api, runtime, ingest, user_id) -> None:
    a = put(api, user_id, "a", {"v": 1}, app_id="p")["memory_id"]
    put(api, user_id, "b", {"v": 2})
    put(api, user_id, "c", {"v": 3}, session_id="s1")

    upd = api.post(f"{V1}/update", json={"user_id": user_id, "memory_id": a, "content": "x"}).json()
    assert upd["code"] == 40001 and "items/put" in upd["msg"], upd
    deleted = api.post(f"{V1}/delete", json={"user_id": user_id, "memory_id": a}).json()
    assert deleted["code"] == 0 and deleted["data"]["deleted"] == 1, deleted
    assert got(api, user_id, "a", app_id="p")["code"] == 40401
    # put again after the delete: a new version of the same memory
    assert put(api, user_id, "a", {"v": 4}, app_id="p") == {"memory_id": a, "op": "put"}

    started = api.post(f"{V1}/export", json={"user_id": user_id}).json()["data"]
    deadline = time.monotonic() + 30
    while (st := api.get(f"{V1}/export/{started['export_id']}").json()["data"])["status"] != "done":
        assert time.monotonic() < deadline and st["status"] == "running", st
        time.sleep(0.1)
    lines = [json.loads(x) for x in api.get(st["url"]).text.splitlines()]
    exported = {x["memory_id"]: x for x in lines if x["type"] == "memory"}
    assert json.loads(exported[a]["content"]) == {"v": 4}  # the value, carried by the export

    purged = api.post(f"{V1}/purge", json={"user_id": user_id}).json()
    assert purged["code"] == 0, purged
    assert got(api, user_id, "a", app_id="p")["code"] == 40401
    assert got(api, user_id, "b")["code"] == 40401
    assert got(api, user_id, "c", session_id="s1")["code"] == 40401
    rows = runtime.memories.load(user_id, tenant="default", mem_types=["ITEM"])
    assert rows and all(r.status is Status.DELETED and not r.content for r in rows)


def test_the_reconcile_restores_an_items_vector_of_its_embedded_text(
    api, runtime, ingest, user_id
) -> None:
    value = {"title": "Cello lessons on Tuesdays", "body": "bring the rosin"}
    mid = put(api, user_id, "cello", value, index=["title"])["memory_id"]
    runtime.stores.milvus.delete([mid])
    summary = run_pass(
        runtime, T0, KafkaVia(runtime.stores, 30), users=[user_id], reconcile_grace_s=0
    )
    assert summary["reconciled"]["missing_vectors"] == 1, summary
    (row,) = runtime.stores.milvus.get([mid], ["vector", "mem_type"])
    want = runtime.embedder.embed([value["title"]])[0]
    vec = np.asarray(row["vector"], dtype=np.float32)
    assert row["mem_type"] == "ITEM"
    assert float(vec @ want / np.linalg.norm(vec) / np.linalg.norm(want)) > 0.999
    idx = runtime.cache.get(user_id, tenant="default")  # reloaded: items not among its rows
    assert mid not in idx and idx.items is None  # read by the writer when it first needs them
    again = put(api, user_id, "cello", value, index=["title"])
    assert again == {"memory_id": mid, "op": "none"}  # the writer read the stored item
    assert idx.items is not None and mid in idx.items and mid not in idx


def test_an_exported_item_imports_as_an_item(api, runtime, ingest, user_id) -> None:
    value = {"text": "prefers aisle seats", "n": None}
    put(api, user_id, "seat", value, app_id="travel", index=["text"])
    started = api.post(f"{V1}/export", json={"user_id": user_id}).json()["data"]
    deadline = time.monotonic() + 30
    while (st := api.get(f"{V1}/export/{started['export_id']}").json()["data"])["status"] != "done":
        assert time.monotonic() < deadline and st["status"] == "running", st
        time.sleep(0.1)
    lines = [json.loads(x) for x in api.get(st["url"]).text.splitlines()]
    (line,) = [x for x in lines if x["type"] == "memory"]
    path, body = write_of(line, user_id + 1, "import:1")  # `memstream import --user`
    assert path.endswith("items/put")
    assert api.post(path, json=body).json()["data"]["op"] == "put"
    copy = got(api, user_id + 1, "seat", app_id="travel")["data"]["item"]
    assert copy["value"] == value


def test_a_scope_delete_takes_the_scopes_items_and_a_session_close_leaves_them(
    api, ingest, user_id
) -> None:
    put(api, user_id, "x", {"v": 1}, app_id="bd")
    put(api, user_id, "y", {"v": 2}, app_id="keep")
    put(api, user_id, "z", {"v": 3}, app_id="keep", session_id="s9")
    closed = api.post(
        f"{V1}/session/close", json={"user_id": user_id, "app_id": "keep", "session_id": "s9"}
    ).json()
    assert closed["code"] == 0 and closed["data"]["dropped"] == [], closed
    assert got(api, user_id, "z", app_id="keep", session_id="s9")["code"] == 0
    body = {"user_id": user_id, "scope": {"app_id": "bd"}}
    deleted = api.post(f"{V1}/batch_delete", json=body).json()
    assert deleted["code"] == 0 and deleted["data"]["deleted"] == 1, deleted
    assert got(api, user_id, "x", app_id="bd")["code"] == 40401
    assert got(api, user_id, "y", app_id="keep")["code"] == 0


def test_the_memory_switch_holds_for_items(api, runtime, ingest, user_id) -> None:
    put(api, user_id, "k", {"v": 1}, app_id="sw")
    runtime.switches.set(user_id, "sw", False, tenant="default")
    body = {"user_id": user_id, "namespace": ["mem"], "key": "k", "value": {"v": 2}}
    assert api.post(f"{V1}/items/put", json={**body, "app_id": "sw"}).json()["code"] == 40301
    assert got(api, user_id, "k", app_id="sw")["code"] == 40301
    search = api.post(f"{V1}/items/search", json={"user_id": user_id, "app_id": "sw"}).json()
    assert search["code"] == 40301
    assert put(api, user_id, "k", {"v": 3})["op"] == "put"  # GLOBAL: the app's switch only
    runtime.switches.set(user_id, "sw", True, tenant="default")
    assert got(api, user_id, "k", app_id="sw")["data"]["item"]["value"] == {"v": 1}
