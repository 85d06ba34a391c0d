"""Dedup within what the writer can see (issue 31: L2/L5).

A new memory is a duplicate only of one its own scope sees: the same app for APP, the
same session for SESSION, and GLOBAL (every scope sees it). A fact app_b writes that
app_a already holds is stored for app_b; app_a's memory and change log are untouched,
and app_b learns nothing about app_a's memories from the answer.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.derived import is_profile_id, profile_id
from memstream.schemas.tenants import DEFAULT_TENANT
from sinks import keystore
from tests.helpers.api_client import api_client
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration
NOW = datetime.now(UTC)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "api_keys.json"

    def make(role="app", apps=()):
        key, _ = keystore.create(path, "default", role, list(apps), global_grant=False, now=NOW)
        return key

    return path, {"A": make(apps=["app_a"]), "B": make(apps=["app_b"]), "admin": make("admin")}


@pytest.fixture(scope="module")
def http(settings, stores, runtime, ingest, keys):
    s = settings.model_copy(update={"api_keys_file": keys[0]})
    with api_client(s, stores, runtime, client=("127.0.0.1", 40000)) as client:
        yield client


def _call(http, keys, who: str, path: str, body: dict | None = None, method: str = "POST"):
    resp = http.request(
        method, path, json=body, headers={"Authorization": f"Bearer {keys[1][who]}"}
    )
    return resp.json()


def _write(http, keys, who: str, user_id: int, content: str, **scope) -> dict:
    got = _call(http, keys, who, "/memory/v1/add_structured",
                {"user_id": user_id, "content": content, **scope})  # fmt: skip
    assert got["code"] == 0, got
    return got["data"]


def _mine(http, keys, who: str, user_id: int) -> dict[str, str]:
    """memory_id -> content of what ``who`` may list."""
    listed = _call(http, keys, who, "/memory/v1/user/list", {"user_id": user_id})["data"]
    out = {m["memory_id"]: m["content"] for m in listed["memories"]["GLOBAL"]}
    for items in listed["memories"]["APP"].values():
        out.update({m["memory_id"]: m["content"] for m in items})
    for items in listed["memories"].get("SESSION", {}).values():
        out.update({m["memory_id"]: m["content"] for m in items})
    return out


def test_another_apps_fact_is_stored_for_the_writer_not_named(http, keys, user_id) -> None:
    fact = "I am allergic to peanuts"
    a = _write(http, keys, "A", user_id, fact, app_id="app_a")
    b = _write(http, keys, "B", user_id, fact, app_id="app_b")
    assert b["memory_id"] != a["memory_id"] and b["duplicate"] is False, (a, b)
    assert _mine(http, keys, "B", user_id) == {b["memory_id"]: fact}
    assert _mine(http, keys, "A", user_id) == {a["memory_id"]: fact}
    # app_a's change log names no write of app_b
    log = _call(http, keys, "admin", "/memory/v1/change_log", {"user_id": user_id})["data"]
    rows = [(c["memory_id"], c["op_type"]) for c in log["items"]]
    # each app's stored profile is written with its memory (docs/architecture.md#the-profile)
    profiles = [r for r in rows if is_profile_id(r[0])]
    mem_rows = [r for r in rows if not is_profile_id(r[0])]
    assert sorted(mem_rows) == sorted([(a["memory_id"], "ADD"), (b["memory_id"], "ADD")]), rows
    pid = {app: profile_id(DEFAULT_TENANT, user_id, app) for app in ("app_a", "app_b")}
    assert sorted(profiles) == sorted([(pid["app_a"], "ADD"), (pid["app_b"], "ADD")]), rows
    # within one app the same words are still one memory
    again = _write(http, keys, "A", user_id, "  i am ALLERGIC to peanuts ", app_id="app_a")
    assert again == {"memory_id": a["memory_id"], "duplicate": True}
    # what every scope sees (GLOBAL) is a duplicate for an app's writer
    g = _write(http, keys, "admin", user_id, "I live in Lisbon", level="GLOBAL")
    dup = _write(http, keys, "B", user_id, "I live in Lisbon", app_id="app_b")
    assert dup == {"memory_id": g["memory_id"], "duplicate": True}


def test_an_add_through_kafka_stores_the_fact_another_app_holds(http, keys, user_id) -> None:
    fact = "I play the viola in an orchestra"
    a = _write(http, keys, "A", user_id, fact, app_id="app_a")
    task = _call(http, keys, "B", "/memory/v1/add", {
        "user_id": user_id, "app_id": "app_b", "messages": [{"role": "user", "content": fact}],
    })["data"]["task_id"]  # fmt: skip
    done = wait_for(
        lambda: (
            (t := _call(http, keys, "B", f"/memory/v1/tasks/{task}", method="GET")["data"])
            and t["status"] in ("done", "failed")
            and t
        ),
        timeout=40,
        what="app_b's add",
    )
    assert done["status"] == "done" and done["counts"]["skipped"] == 0, done
    assert a["memory_id"] not in str(done)
    b_has = _mine(http, keys, "B", user_id)
    assert len(b_has) == 1 and "viola" in next(iter(b_has.values())), b_has
    assert _mine(http, keys, "A", user_id) == {a["memory_id"]: fact}


def test_sessions_do_not_share_duplicates(http, keys, user_id) -> None:
    fact = "The meeting moved to Thursday"
    s1 = _write(http, keys, "A", user_id, fact, app_id="app_a", level="SESSION", session_id="s1")
    s2 = _write(http, keys, "A", user_id, fact, app_id="app_a", level="SESSION", session_id="s2")
    assert s1["memory_id"] != s2["memory_id"] and not s2["duplicate"]
    s1_again = _write(
        http, keys, "A", user_id, fact, app_id="app_a", level="SESSION", session_id="s1"
    )
    assert s1_again == {"memory_id": s1["memory_id"], "duplicate": True}
