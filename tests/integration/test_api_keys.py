"""API keys against the real stack: every endpoint × (app key, other app, GLOBAL grant,
admin, other tenant — isolated, not refused —, no key, revoked key), and rate limits.

Keys live hashed in a key file of their own (``api_keys_file``), created the way
``memstream keys create`` does; the app under test shares the session's stores.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.derived import profile_id
from memstream.schemas.tenants import DEFAULT_TENANT
from sinks import keystore
from tests.helpers.api_client import api_client

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)


def _client(settings, stores, runtime, **overrides):
    s = settings.model_copy(update=overrides)
    return api_client(s, stores, runtime, client=("127.0.0.1", 40000))


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "api_keys.json"

    def make(tenant="default", role="app", apps=(), grant=False):
        key, _ = keystore.create(path, tenant, role, list(apps), global_grant=grant, now=NOW)
        return key

    made = {
        "A": make(apps=["appA"]),
        "B": make(apps=["appB"]),
        "G": make(apps=["appA"], grant=True),
        "admin": make(role="admin"),
        "T2": make(tenant="t2", apps=["appA"]),
    }
    revoked = make(apps=["appA"])
    keystore.revoke(path, revoked.split("_")[1], NOW)
    made["revoked"] = revoked
    made["none"] = ""
    return path, made


@pytest.fixture(scope="module")
def http(settings, stores, runtime, ingest, keys):
    path, _ = keys
    with _client(settings, stores, runtime, api_keys_file=path) as client:
        yield client


def _call(http, keys, who: str, path: str, body: dict | None = None, method: str = "POST"):
    key = keys[1][who]
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    resp = http.request(method, path, json=body, headers=headers)
    return resp.json()


def _seed(http, keys, user_id: int) -> dict[str, str]:
    """mA (APP appA), mB (APP appB), mG (GLOBAL), written with the admin key."""
    out = {}
    for name, extra in {
        "mA": {"app_id": "appA", "level": "APP", "content": "I like green tea"},
        "mB": {"app_id": "appB", "level": "APP", "content": "I like black coffee"},
        "mG": {"level": "GLOBAL", "content": "I live in Lisbon"},
    }.items():
        body = _call(
            http, keys, "admin", "/memory/v1/add_structured", {"user_id": user_id, **extra}
        )
        assert body["code"] == 0, body
        out[name] = body["data"]["memory_id"]
    return out


def test_no_key_and_revoked_keys_are_refused_everywhere(http, keys, user_id):
    for who in ("none", "revoked"):
        for path, body in [
            ("/memory/v1/recall", {"user_id": user_id, "query": "tea"}),
            ("/memory/v1/add_structured", {"user_id": user_id, "content": "x", "app_id": "appA"}),
            ("/memory/v1/user/list", {"user_id": user_id}),
            ("/admin/v1/sql", {"query": "SELECT 1"}),
        ]:
            body = _call(http, keys, who, path, body)
            assert body["code"] == 40101, (who, path, body)
            assert body["trace_id"]


def test_another_tenants_key_is_isolated_everywhere(http, keys, user_id):
    """T2 (tenant t2, app appA) is served, in tenant t2: the same user id there is another
    person, so it sees none of tenant default's data and changes none of it."""
    ids = _seed(http, keys, user_id)
    u = {"user_id": user_id}
    got = _call(http, keys, "T2", "/memory/v1/recall",
                {**u, "query": "tea coffee Lisbon", "min_relevance": 0,
                 "scope": {"app_id": "appA"}})  # fmt: skip
    assert got["code"] == 0 and got["data"]["memories"] == [], got
    listed = _call(http, keys, "T2", "/memory/v1/user/list", u)
    assert listed["code"] == 0 and listed["data"]["total"] == 0, listed
    log = _call(http, keys, "T2", "/memory/v1/change_log", u)
    assert log["code"] == 0 and log["data"]["total"] == 0, log
    for mid in ids.values():
        for path, body in [
            ("/memory/v1/history", {"memory_id": mid}),
            ("/memory/v1/update", {"memory_id": mid, "is_important": True}),
            ("/memory/v1/delete", {"memory_id": mid}),
            ("/memory/v1/batch_delete", {"memory_ids": [mid]}),
        ]:
            got = _call(http, keys, "T2", path, {**u, **body})
            assert got["code"] == 40401, (path, got)
    empty = _call(http, keys, "T2", "/memory/v1/batch_delete", {**u, "scope": {}})
    assert empty["code"] == 0 and empty["data"]["deleted"] == 0, empty
    # its writes land in tenant t2 and stay there
    mine = _call(http, keys, "T2", "/memory/v1/add_structured",
                 {**u, "content": "I like oolong tea", "app_id": "appA"})  # fmt: skip
    assert mine["code"] == 0, mine
    every = _call(http, keys, "admin", "/memory/v1/user/list", u)["data"]
    assert every["total"] == 3 and mine["data"]["memory_id"] not in str(every)
    task = _call(
        http,
        keys,
        "A",
        "/memory/v1/add",
        {**u, "app_id": "appA", "messages": [{"role": "user", "content": "I row"}]},
    )
    path = f"/memory/v1/tasks/{task['data']['task_id']}"  # fmt: skip
    assert _call(http, keys, "T2", path, method="GET")["code"] == 40401
    assert _call(http, keys, "T2", "/admin/v1/sql", {"query": "SELECT 1"})["code"] == 40101


@pytest.mark.parametrize(
    ("who", "path", "body", "code"),
    [
        # recall: a named app must be the key's
        ("A", "/memory/v1/recall", {"query": "tea", "scope": {"app_id": "appA"}}, 0),
        ("A", "/memory/v1/recall", {"query": "tea", "scope": {"app_id": "appB"}}, 40101),
        ("A", "/memory/v1/recall", {"query": "tea", "scope": {"session_id": "s1"}}, 40101),
        # writes: APP of its own app; GLOBAL needs the grant
        ("A", "/memory/v1/add_structured", {"content": "a1", "app_id": "appA"}, 0),
        ("A", "/memory/v1/add_structured", {"content": "a2", "app_id": "appB"}, 40101),
        ("A", "/memory/v1/add_structured", {"content": "a3", "level": "GLOBAL"}, 40101),
        ("G", "/memory/v1/add_structured", {"content": "a4", "level": "GLOBAL"}, 0),
        ("A", "/memory/v1/add", {"messages": [{"role": "user", "content": "hi"}]}, 40101),
        ("A", "/memory/v1/add",
         {"app_id": "appA", "messages": [{"role": "user", "content": "I own a cat"}]}, 0),
        # admin-only operations
        ("A", "/memory/v1/purge", {}, 40101),
        ("A", "/memory/v1/switch", {"enabled": True}, 40101),
        ("A", "/memory/v1/switch", {"enabled": True, "app_id": "appB"}, 40101),
        ("A", "/memory/v1/switch", {"enabled": True, "app_id": "appA"}, 0),
        ("A", "/memory/v1/export", {}, 40101),
        ("A", "/admin/v1/sql", {"query": "SELECT 1"}, 40101),
        ("A", "/admin/v1/lifecycle/run", {"users": []}, 40101),
        ("admin", "/admin/v1/sql", {"query": "SELECT 1"}, 0),
        ("A", "/memory/v1/session/close", {"session_id": "s1"}, 40101),
        ("A", "/memory/v1/session/close", {"session_id": "s1", "app_id": "appB"}, 40101),
    ],
)  # fmt: skip
def test_scope_checks(http, keys, user_id, who, path, body, code):
    if path.startswith("/memory"):
        body = {"user_id": user_id, **body}
    got = _call(http, keys, who, path, body)
    assert got["code"] == code, got


@pytest.mark.parametrize(
    ("who", "target", "code"),
    [
        ("A", "mA", 0),
        ("A", "mB", 40401),  # another app's memory: as if it did not exist
        ("A", "mG", 40101),  # GLOBAL: readable, not writable without the grant
        ("G", "mG", 0),
        ("B", "mA", 40401),
        ("admin", "mB", 0),
    ],
)
def test_by_id_checks_on_update_delete_and_history(http, keys, user_id, who, target, code):
    ids = _seed(http, keys, user_id)
    mid = ids[target]
    upd = _call(http, keys, who, "/memory/v1/update",
                {"user_id": user_id, "memory_id": mid, "is_important": True})  # fmt: skip
    assert upd["code"] == code, upd
    hist = _call(http, keys, who, "/memory/v1/history", {"user_id": user_id, "memory_id": mid})
    assert hist["code"] == (40401 if code == 40401 else 0), hist
    one = _call(
        http, keys, who, "/memory/v1/batch_delete", {"user_id": user_id, "memory_ids": [mid]}
    )
    assert one["code"] == code, one
    if code == 0:
        assert one["data"]["deleted"] == 1, one
    else:
        gone = _call(http, keys, "admin", "/memory/v1/history",
                     {"user_id": user_id, "memory_id": mid})  # fmt: skip
        assert gone["data"]["memory"]["status"] == "ACTIVE", gone


def test_reads_without_a_scope_show_only_what_the_key_may_see(http, keys, user_id):
    ids = _seed(http, keys, user_id)
    listed = _call(http, keys, "A", "/memory/v1/user/list", {"user_id": user_id})["data"]
    seen = {m["memory_id"] for m in listed["memories"]["GLOBAL"]}
    for items in listed["memories"]["APP"].values():
        seen |= {m["memory_id"] for m in items}
    assert seen == {ids["mA"], ids["mG"]} and listed["total"] == 2

    # The profiles A may read (GLOBAL's and appA's) are listed apart, never appB's.
    mine = {profile_id(DEFAULT_TENANT, user_id, None), profile_id(DEFAULT_TENANT, user_id, "appA")}
    assert {p["memory_id"] for p in listed["profiles"]} == mine

    log = _call(http, keys, "A", "/memory/v1/change_log", {"user_id": user_id})["data"]
    changed = {c["memory_id"] for c in log["items"]}
    # change_log shows the profiles' versions too (docs/architecture.md#the-profile)
    assert changed - mine == {ids["mA"], ids["mG"]}
    assert profile_id(DEFAULT_TENANT, user_id, "appB") not in changed

    every = _call(http, keys, "admin", "/memory/v1/user/list", {"user_id": user_id})["data"]
    assert every["total"] == 3

    recalled = _call(http, keys, "A", "/memory/v1/recall",
                     {"user_id": user_id, "query": "coffee tea Lisbon", "min_relevance": 0,
                      "scope": {"app_id": "appA"}})["data"]["memories"]  # fmt: skip
    assert ids["mB"] not in {m["memory_id"] for m in recalled}


def test_an_empty_scope_delete_by_an_app_key_deletes_only_its_apps(http, keys, user_id):
    ids = _seed(http, keys, user_id)
    done = _call(http, keys, "A", "/memory/v1/batch_delete", {"user_id": user_id, "scope": {}})
    assert done["code"] == 0 and done["data"]["memory_ids"] == [ids["mA"]], done
    left = _call(http, keys, "admin", "/memory/v1/user/list", {"user_id": user_id})["data"]
    assert left["total"] == 2 and "appA" not in left["memories"]["APP"]
    assert [m["memory_id"] for m in left["memories"]["APP"]["appB"]] == [ids["mB"]]
    assert [m["memory_id"] for m in left["memories"]["GLOBAL"]] == [ids["mG"]]


def test_a_task_is_visible_to_its_app_only(http, keys, user_id):
    added = _call(
        http,
        keys,
        "B",
        "/memory/v1/add",
        {"user_id": user_id, "app_id": "appB", "messages": [{"role": "user", "content": "I ski"}]},
    )
    task = added["data"]["task_id"]
    assert _call(http, keys, "B", f"/memory/v1/tasks/{task}", method="GET")["code"] == 0
    assert _call(http, keys, "A", f"/memory/v1/tasks/{task}", method="GET")["code"] == 40401
    assert _call(http, keys, "admin", f"/memory/v1/tasks/{task}", method="GET")["code"] == 0


def test_rate_limit_answers_42910_with_retry_after_and_spares_other_keys(
    settings, stores, runtime, ingest, keys, user_id
):
    path, made = keys
    low = {"rate_limit_key_recall": "3/minute", "rate_limit_user_write": "2/minute"}
    with _client(settings, stores, runtime, api_keys_file=path, **low) as client:

        def recall(who):
            return client.post(
                "/memory/v1/recall",
                json={"user_id": user_id, "query": "tea", "scope": {"app_id": "appA"}},
                headers={"Authorization": f"Bearer {made[who]}"},
            )

        assert [recall("A").json()["code"] for _ in range(3)] == [0, 0, 0]
        over = recall("A")
        assert over.status_code == 429 and over.json()["code"] == 42910
        assert 1 <= int(over.headers["Retry-After"]) <= 60
        assert recall("G").json()["code"] == 0  # another key has its own bucket

        # writes have their own buckets (recall never waits behind them), per user too
        def write(uid):
            return client.post(
                "/memory/v1/add_structured",
                json={"user_id": uid, "content": f"fact {uid}", "app_id": "appA"},
                headers={"Authorization": f"Bearer {made['G']}"},
            ).json()["code"]

        assert [write(user_id) for _ in range(3)] == [0, 0, 42910]
        assert write(user_id + 1) == 0  # another user of the same key
