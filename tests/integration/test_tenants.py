"""Tenant namespaces against the real stack (Kafka, Redis, chDB, Milvus Lite), through HTTP.

User ``u`` of tenant ``t1`` and user ``u`` of tenant ``t2`` are two people: each tenant's
keys write, recall, list, read the history and change log of, export, switch off and
purge only their own ``u``; a memory id of the other tenant is not found (40401); a Kafka
event lands in the tenant it names, and one that names none in ``default``.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest
from confluent_kafka import Producer

from core.derived import is_profile_id, profile_id
from memstream.schemas.enums import Status
from recall_api.state import api_state
from sinks import keystore
from tests.helpers.api_client import api_client
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)
T1_TEA, T2_TEA = "I like green tea from Kyoto", "I like jasmine tea from Fuzhou"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    path = tmp_path_factory.mktemp("tenant_keys") / "api_keys.json"

    def make(tenant, role="app", apps=()):
        key, _ = keystore.create(path, tenant, role, list(apps), global_grant=False, now=NOW)
        return key

    made = {
        "t1_admin": make("t1", "admin"),
        "t1_app": make("t1", apps=["appA"]),
        "t2_admin": make("t2", "admin"),
        "t2_app": make("t2", apps=["appA"]),
        "default_admin": make("default", "admin"),
    }
    return path, made


@pytest.fixture(scope="module")
def http(settings, stores, runtime, ingest, keys):
    s = settings.model_copy(update={"api_keys_file": keys[0]})
    with api_client(s, stores, runtime, client=("127.0.0.1", 40001)) as client:
        yield client


def call(http, keys, who: str, path: str, body: dict | None = None, method: str = "POST"):
    headers = {"Authorization": f"Bearer {keys[1][who]}"}
    return http.request(method, path, json=body, headers=headers).json()


def ok(got: dict) -> dict:
    assert got["code"] == 0, got
    return got["data"]


def write(http, keys, who: str, user_id: int, content: str, **extra) -> str:
    body = {"user_id": user_id, "app_id": "appA", "content": content, **extra}
    return ok(call(http, keys, who, "/memory/v1/add_structured", body))["memory_id"]


def listed_ids(data: dict) -> set[str]:
    mems = data["memories"]
    out = {m["memory_id"] for m in mems["GLOBAL"]}
    for group in ("APP", "SESSION"):
        for items in mems[group].values():
            out |= {m["memory_id"] for m in items}
    return out


def profiles_of(tenant: str, user_id: int) -> set[str]:
    """The stored profile of ``user_id`` in ``tenant`` after ``write``s (appA's only: a
    user without GLOBAL memories has no GLOBAL profile)."""
    return {profile_id(tenant, user_id, "appA")}


def recall(http, keys, who: str, user_id: int, **extra) -> list[dict]:
    # the default 500 ms deadline is the API's; a loaded CI machine must not turn it into 50401
    body = {
        "user_id": user_id,
        "query": "which tea do I like",
        "min_relevance": 0,
        "timeout_ms": 5000,
    }
    body |= {"scope": {"app_id": "appA"}, **extra}
    return ok(call(http, keys, who, "/memory/v1/recall", body))["memories"]


def export_lines(http, keys, who: str, user_id: int) -> list[dict]:
    started = ok(call(http, keys, who, "/memory/v1/export", {"user_id": user_id}))
    export_id = started["export_id"]
    status = wait_for(
        lambda: (
            (d := call(http, keys, who, f"/memory/v1/export/{export_id}", method="GET")["data"])
            and d["status"] in ("done", "failed")
            and d
        ),
        what="the export",
    )
    assert status["status"] == "done", status
    body = http.get(status["url"]).content.decode()
    return [json.loads(line) for line in body.splitlines() if line]


def test_the_same_user_in_two_tenants_is_two_people(http, keys, user_id):
    m1 = write(http, keys, "t1_app", user_id, T1_TEA)
    m2 = write(http, keys, "t2_app", user_id, T2_TEA)
    assert m1 != m2

    # recall, hot (in-memory index) and cold (Milvus filter) paths
    for archived in (False, True):
        got1 = recall(http, keys, "t1_app", user_id, include_archived=archived)
        got2 = recall(http, keys, "t2_app", user_id, include_archived=archived)
        assert [m["memory_id"] for m in got1] == [m1], got1
        assert [m["memory_id"] for m in got2] == [m2], got2
        assert got1[0]["content"] == T1_TEA and got2[0]["content"] == T2_TEA

    # user/list and change_log: each its own; the stored profile of the tenant's user
    # (docs/architecture.md#the-profile) is listed apart and changes with its memory
    for who, mine in (("t1_admin", m1), ("t2_admin", m2), ("t1_app", m1), ("t2_app", m2)):
        own = profiles_of(who[:2], user_id)
        listed = ok(call(http, keys, who, "/memory/v1/user/list", {"user_id": user_id}))
        assert listed_ids(listed) == {mine} and listed["total"] == 1, (who, listed)
        assert {m["memory_id"] for m in listed["profiles"]} == own, (who, listed)
        log = ok(call(http, keys, who, "/memory/v1/change_log", {"user_id": user_id}))
        changed = {c["memory_id"] for c in log["items"]}
        assert changed - own == {mine} and changed & own, (who, log)
        assert log["total"] == len(log["items"])
        assert len([c for c in log["items"] if not is_profile_id(c["memory_id"])]) == 1

    # history: its own memory, and the other tenant's id is not found
    hist = ok(
        call(http, keys, "t1_app", "/memory/v1/history", {"user_id": user_id, "memory_id": m1})
    )
    assert hist["memory"]["content"] == T1_TEA
    other = call(http, keys, "t1_app", "/memory/v1/history", {"user_id": user_id, "memory_id": m2})
    assert other["code"] == 40401, other

    # the default tenant's user of that id has nothing
    nothing = ok(call(http, keys, "default_admin", "/memory/v1/user/list", {"user_id": user_id}))
    assert nothing["total"] == 0

    # exports: each tenant's file holds its own memories, each line names the tenant
    for who, mine, text, tenant in (("t1_admin", m1, T1_TEA, "t1"), ("t2_admin", m2, T2_TEA, "t2")):
        lines = export_lines(http, keys, who, user_id)
        own = profiles_of(tenant, user_id)
        memories = [x for x in lines if x["type"] == "memory"]
        assert {m["memory_id"] for m in memories} == {mine} | own  # the profile too
        assert [m["content"] for m in memories if m["memory_id"] == mine] == [text]
        assert {x["tenant_id"] for x in lines} == {tenant}
        assert {x["memory_id"] for x in lines if x["type"] == "change"} == {mine} | own

    # the durable rows carry the tenant (what analysts query)
    for tenant, mine in (("t1", m1), ("t2", m2)):
        (rec,) = wait_for(
            lambda t=tenant: api_state(http.app).services.memories.load(user_id, tenant=t)
        )
        assert rec.memory_id == mine and rec.tenant_id == tenant


def test_an_app_key_of_t2_cannot_touch_t1_memory_ids(http, keys, user_id):
    m1 = write(http, keys, "t1_app", user_id, T1_TEA)
    write(http, keys, "t2_app", user_id, T2_TEA)
    for who in ("t2_app", "t2_admin"):
        for path, body in [
            ("/memory/v1/update", {"memory_id": m1, "is_important": True}),
            ("/memory/v1/update", {"memory_id": m1, "content": "I like coffee"}),
            ("/memory/v1/delete", {"memory_id": m1}),
            ("/memory/v1/history", {"memory_id": m1}),
        ]:
            got = call(http, keys, who, path, {"user_id": user_id, **body})
            assert got["code"] == 40401, (who, path, got)
        # a batch naming t1's id deletes nothing (it is not t2's memory)
        got = call(http, keys, who, "/memory/v1/batch_delete",
                   {"user_id": user_id, "memory_ids": [m1]})  # fmt: skip
        assert got["code"] in (0, 40401) and not (got.get("data") or {}).get("deleted"), got
    still = ok(
        call(http, keys, "t1_app", "/memory/v1/history", {"user_id": user_id, "memory_id": m1})
    )
    assert still["memory"]["status"] == "ACTIVE" and not still["memory"]["is_important"]
    assert still["memory"]["content"] == T1_TEA


def test_a_purge_in_t2_leaves_t1_intact_and_readable(http, keys, user_id):
    m1 = write(http, keys, "t1_app", user_id, T1_TEA)
    m2 = write(http, keys, "t2_app", user_id, T2_TEA)
    purged = ok(call(http, keys, "t2_admin", "/memory/v1/purge", {"user_id": user_id}))
    assert purged["crypto_shredded"] is True

    assert recall(http, keys, "t2_app", user_id) == []
    gone = ok(call(http, keys, "t2_admin", "/memory/v1/user/list", {"user_id": user_id}))
    assert gone["total"] == 0
    shredded = ok(call(http, keys, "t2_admin", "/memory/v1/history",
                       {"user_id": user_id, "memory_id": m2}))  # fmt: skip
    assert shredded["memory"]["status"] == "DELETED" and shredded["memory"]["content"] == ""

    # t1's user of the same id: intact, and still decrypts (its data key is its own)
    got = recall(http, keys, "t1_app", user_id)
    assert [m["memory_id"] for m in got] == [m1] and got[0]["content"] == T1_TEA
    hist = ok(
        call(http, keys, "t1_admin", "/memory/v1/history", {"user_id": user_id, "memory_id": m1})
    )
    assert hist["memory"]["content"] == T1_TEA and hist["memory"]["status"] == "ACTIVE"
    assert [c["content_after"] for c in hist["changes"]] == [T1_TEA]
    keyring = api_state(http.app).services.memories.cipher
    assert keyring.current(user_id, "t1") is not None

    # t2's user can start again, with a fresh key
    again = write(http, keys, "t2_app", user_id, "I like oolong tea")
    assert [m["memory_id"] for m in recall(http, keys, "t2_app", user_id)] == [again]


def test_switches_and_tasks_are_per_tenant(http, keys, user_id):
    off = ok(
        call(http, keys, "t2_admin", "/memory/v1/switch", {"user_id": user_id, "enabled": False})
    )
    assert off["enabled"] is False
    refused = call(http, keys, "t2_app", "/memory/v1/add_structured",
                   {"user_id": user_id, "app_id": "appA", "content": "x"})  # fmt: skip
    assert refused["code"] == 40301
    m1 = write(http, keys, "t1_app", user_id, T1_TEA)  # t1's user is not switched off
    assert [m["memory_id"] for m in recall(http, keys, "t1_app", user_id)] == [m1]
    assert call(http, keys, "t2_app", "/memory/v1/recall",
                {"user_id": user_id, "query": "tea", "timeout_ms": 5000})["code"] == 40301  # fmt: skip
    ok(call(http, keys, "t2_admin", "/memory/v1/switch", {"user_id": user_id, "enabled": True}))

    # the same request id in two tenants: two tasks, each visible to its tenant only
    body = {"user_id": user_id, "app_id": "appA", "request_id": f"same-{user_id}",
            "messages": [{"role": "user", "content": "I play the cello"}]}  # fmt: skip
    task1 = ok(call(http, keys, "t1_app", "/memory/v1/add", body))["task_id"]
    task2 = ok(call(http, keys, "t2_app", "/memory/v1/add", body))["task_id"]
    assert task1 != task2
    for who, mine, theirs in (("t1_app", task1, task2), ("t2_admin", task2, task1)):
        seen = call(http, keys, who, f"/memory/v1/tasks/{mine}", method="GET")
        assert seen["code"] == 0 and seen["data"]["tenant_id"] == who[:2], seen
        assert call(http, keys, who, f"/memory/v1/tasks/{theirs}", method="GET")["code"] == 40401
    for who, task in (("t1_app", task1), ("t2_app", task2)):
        done = wait_for(
            lambda w=who, t=task: (
                (d := call(http, keys, w, f"/memory/v1/tasks/{t}", method="GET")["data"])
                and d["status"] in ("done", "failed")
                and d
            ),
            what=task,
        )
        assert done["status"] == "done", done
    # the same request id of add_structured in two tenants: two memories
    a = write(http, keys, "t1_app", user_id, "I like rooibos", request_id=f"r-{user_id}")
    b = write(http, keys, "t2_app", user_id, "I like rooibos", request_id=f"r-{user_id}")
    assert a != b


def test_admin_sql_and_export_status_stay_in_the_tenant(http, keys, user_id):
    m1 = write(http, keys, "t1_app", user_id, T1_TEA)
    m2 = write(http, keys, "t2_app", user_id, T2_TEA)
    db = api_state(http.app).stores.clickhouse.database
    for who, mine, theirs in (("t1_admin", m1, m2), ("t2_admin", m2, m1)):
        for table in (f"{db}.memories", f"{db}.memory_changelog"):
            got = ok(call(http, keys, who, "/admin/v1/sql",
                          {"query": f"SELECT memory_id, tenant_id FROM {table} "
                                    f"WHERE user_id = {user_id}"}))  # fmt: skip
            rows = {tuple(r) for r in got["rows"]}
            # every row is the tenant's; its own user's profile rows among them
            assert {r[1] for r in rows} == {who[:2]}, (who, table, got)
            assert {r[0] for r in rows} == {mine} | profiles_of(who[:2], user_id), (who, table)
        for sneaky in (
            f"SELECT * FROM merge('{db}', 'memories')",
            "SELECT * FROM system.tables",
            f"SELECT * FROM {db}.memories SETTINGS additional_table_filters = {{}}",
        ):
            got = call(http, keys, who, "/admin/v1/sql", {"query": sneaky})
            rows = (got.get("data") or {}).get("rows") or []
            assert got["code"] != 0 or all(theirs not in map(str, r) for r in rows), got
            assert got["code"] == 40001 and "refused" in got["msg"], got  # core.sql_guard
    # an export of t1 is not t2's to see
    started = ok(call(http, keys, "t1_admin", "/memory/v1/export", {"user_id": user_id}))
    path = f"/memory/v1/export/{started['export_id']}"
    assert call(http, keys, "t2_admin", path, method="GET")["code"] == 40401
    assert call(http, keys, "t1_admin", path, method="GET")["code"] == 0


def _produce(bootstrap: str, event: dict) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(
        "memory.conversations", key=str(event["user_id"]).encode(), value=json.dumps(event)
    )
    assert producer.flush(15) == 0


def _event(user_id: int, task_id: str, text: str, **extra) -> dict:
    return {
        "task_id": task_id,
        "user_id": user_id,
        "messages": [{"role": "user", "content": text, "msg_id": f"{task_id}-0"}],
        **extra,
    }


def test_a_kafka_event_lands_in_the_tenant_it_names_and_in_default_without_one(
    runtime, ingest, servers, user_id
):
    tenant_task, default_task = f"kt2-{user_id}", f"kdf-{user_id}"
    _produce(servers.kafka_bootstrap, _event(user_id, tenant_task, "I am a pilot.", tenant_id="t2"))
    _produce(servers.kafka_bootstrap, _event(user_id, default_task, "I am a baker."))
    for task, tenant in ((tenant_task, "t2"), (default_task, "default")):
        status = wait_for(
            lambda t=task, n=tenant: (
                (s := runtime.tasks.get(t, tenant=n)) and s["status"] in ("done", "failed") and s
            ),
            what=task,
        )
        assert status["status"] == "done" and status["tenant_id"] == tenant, status
    # the task ids are the same text in both namespaces, each found in its own only
    assert runtime.tasks.get(tenant_task, tenant="default") is None
    assert runtime.tasks.get(default_task, tenant="t2") is None

    in_t2 = runtime.memories.load(user_id, statuses=[Status.ACTIVE], tenant="t2")
    in_default = runtime.memories.load(user_id, statuses=[Status.ACTIVE], tenant="default")
    assert [m.content for m in in_t2] and all("pilot" in m.content for m in in_t2)
    assert [m.content for m in in_default] and all("baker" in m.content for m in in_default)
    assert {m.tenant_id for m in in_t2} == {"t2"} and {m.tenant_id for m in in_default} == {
        "default"
    }
    assert not {m.memory_id for m in in_t2} & {m.memory_id for m in in_default}

    # an invalid tenant id is refused to the DLQ, nothing is stored
    _produce(servers.kafka_bootstrap, _event(user_id, f"kbad-{user_id}", "I am a poet.",
                                             tenant_id="no spaces|here"))  # fmt: skip
    time.sleep(2.0)
    everything = [
        m
        for t in ("default", "t2", "no spaces|here")
        for m in runtime.memories.load(user_id, tenant=t)
    ]
    assert not any("poet" in m.content for m in everything)


def test_recall_hits_recover_the_recalled_tenants_memory_only(http, keys, lifecycle, user_id):
    m1 = write(http, keys, "t1_app", user_id, T1_TEA)
    m2 = write(http, keys, "t2_app", user_id, T2_TEA)
    assert [m["memory_id"] for m in recall(http, keys, "t2_app", user_id)] == [m2]
    mem = api_state(http.app).services.memories

    def counted():
        (rec,) = mem.load(user_id, memory_ids=[m2], tenant="t2")
        return rec.recall_count >= 1 and rec

    wait_for(counted, what="t2's recall hit")
    (untouched,) = mem.load(user_id, memory_ids=[m1], tenant="t1")
    assert untouched.recall_count == 0


# a pass's whole summary (the route answers it as ``LifecycleSummary``)
SUMMARY = {
    "now": "2026-07-01T00:00:00+00:00",
    "users": 0,
    **dict.fromkeys(("archived", "expired", "purged", "purged_deleted", "purged_archived"), 0),
    **dict.fromkeys(
        ("sanitized_changes", "consolidated", "consolidated_members", "failed_commands"), 0
    ),
    "reconciled": {},
    "took_s": 0.0,
}


def test_an_admin_keys_lifecycle_pass_covers_its_tenant(http, keys, user_id):
    asked = []
    api_state(http.app).lifecycle_runner = lambda **kw: asked.append(kw) or SUMMARY
    try:
        for who, tenant in (("t2_admin", "t2"), ("default_admin", "default")):
            got = call(http, keys, who, "/admin/v1/lifecycle/run", {"users": [user_id]})
            assert got["code"] == 0, got
            seen = asked.pop()
            assert seen["tenant"] == tenant and seen["users"] == [user_id], seen
    finally:
        api_state(http.app).lifecycle_runner = None
