"""users/resolve and purge/export by external id, against the real stack (Kafka, Redis,
chDB, Milvus Lite) through HTTP (docs/api.md#usersresolve).

An external id maps to one random user id per tenant, created once even when many
callers of two API processes resolve it at the same moment; the registry is ClickHouse's
(Redis only caches it); a purge erases the mapping, so the id then names a new user.
"""

from __future__ import annotations

import json
import threading
import uuid
from datetime import UTC, datetime

import httpx
import pytest

from memstream.schemas.enums import Status
from memstream.schemas.storage import REGISTRY_TABLE
from sinks import keystore
from sinks.crypto import DecryptionError, LegacyCipher
from sinks.keyring import KeyRing
from sinks.master_key import LocalMasterKey
from sinks.user_registry import UserRegistry
from tests.helpers.api_client import api_client
from tests.helpers.api_server import running_api
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

RESOLVE = "/memory/v1/users/resolve"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    path = tmp_path_factory.mktemp("resolve_keys") / "api_keys.json"
    now = datetime.now(UTC)

    def make(tenant, role="app", apps=()):
        return keystore.create(path, tenant, role, list(apps), global_grant=False, now=now)[0]

    made = {
        "admin": make("default", "admin"),
        "app": make("default", apps=["appA"]),
        "t2_admin": make("t2", "admin"),
    }
    return path, made


@pytest.fixture(scope="module")
def http(settings, stores, runtime, ingest, keys):
    s = settings.model_copy(update={"api_keys_file": keys[0]})
    with api_client(s, stores, runtime) as client:
        yield client


def call(http, keys, who: str, path: str, body: dict | None = None, method: str = "POST"):
    headers = {"Authorization": f"Bearer {keys[1][who]}"}
    return http.request(method, path, json=body, headers=headers).json()


def ok(got: dict) -> dict:
    assert got["code"] == 0, got
    return got["data"]


def new_external_id() -> str:
    return f"user-{uuid.uuid4()}@example.com"


def registry_rows(runtime, tenant: str, user_id: int) -> int:
    ch = runtime.stores.clickhouse
    return int(
        ch.query(
            f"SELECT count() FROM {ch.database}.{REGISTRY_TABLE} FINAL "
            "WHERE tenant_id = {t:String} AND user_id = {u:UInt64}",
            {"t": tenant, "u": user_id},
        )[0][0]
    )


def test_resolve_creates_once_then_answers_the_same_id(http, keys, runtime):
    ext = new_external_id()
    first = ok(call(http, keys, "app", RESOLVE, {"external_id": ext}))
    assert first["created"] is True
    assert 0 < first["user_id"] < 2**63
    again = ok(call(http, keys, "app", RESOLVE, {"external_id": ext}))
    assert again == {"user_id": first["user_id"], "created": False}
    by_admin = ok(call(http, keys, "admin", RESOLVE, {"external_id": ext}))
    assert by_admin == again  # any key of the tenant: the same user
    # another spelling is another user; the id is no hash of the text (random)
    other = ok(call(http, keys, "app", RESOLVE, {"external_id": ext.upper()}))
    assert other["created"] and other["user_id"] != first["user_id"]
    # the registry holds a keyed token, never the external id
    ch = runtime.stores.clickhouse
    rows = ch.query(
        f"SELECT lookup FROM {ch.database}.{REGISTRY_TABLE} WHERE user_id = {{u:UInt64}}",
        {"u": first["user_id"]},
    )
    assert len(rows) == 1 and ext not in rows[0][0] and len(rows[0][0]) == 32


def test_concurrent_first_resolves_of_two_api_processes_agree(
    settings, stores, runtime, ingest, keys
):
    s = settings.model_copy(update={"api_keys_file": keys[0]})
    headers = {"Authorization": f"Bearer {keys[1]['app']}"}
    ext = new_external_id()
    start = threading.Barrier(8)
    answers: list[dict] = []

    with running_api(s, stores, runtime) as one, running_api(s, stores, runtime) as two:

        def resolve(url: str) -> None:
            with httpx.Client(base_url=url, timeout=30) as client:
                start.wait()
                answers.append(
                    client.post(RESOLVE, json={"external_id": ext}, headers=headers).json()
                )

        threads = [threading.Thread(target=resolve, args=((one, two)[i % 2],)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    data = [ok(a) for a in answers]
    assert len(data) == 8
    assert len({d["user_id"] for d in data}) == 1, data
    assert sum(d["created"] for d in data) == 1, data
    assert registry_rows(runtime, "default", data[0]["user_id"]) == 1


def test_the_same_external_id_in_two_tenants_is_two_users(http, keys):
    ext = new_external_id()
    mine = ok(call(http, keys, "admin", RESOLVE, {"external_id": ext}))
    theirs = ok(call(http, keys, "t2_admin", RESOLVE, {"external_id": ext}))
    assert mine["created"] and theirs["created"]
    assert mine["user_id"] != theirs["user_id"]
    # each tenant's admin finds only its own: t2 cannot purge default's user by the id
    gone = call(http, keys, "t2_admin", "/memory/v1/purge", {"external_id": ext})
    assert gone["code"] == 0
    assert ok(call(http, keys, "admin", RESOLVE, {"external_id": ext})) == {
        "user_id": mine["user_id"],
        "created": False,
    }


@pytest.mark.parametrize(
    "body",
    [
        {"external_id": ""},
        {"external_id": "x" * 257},
        {"external_id": "alice\nbob"},
        {"external_id": "tab\there"},
        {"external_id": "nul\x00"},
        {"external_id": 42},
        {"external_id": None},
        {},
        {"external_id": "alice", "user_id": 1},
    ],
)
def test_bad_external_ids_are_refused(http, keys, body):
    got = call(http, keys, "app", RESOLVE, body)
    assert got["code"] == 40001, got
    assert "external_id" in got["msg"] or "user_id" in got["msg"], got


def test_the_longest_external_id_and_any_script_resolve(http, keys):
    for ext in ("x" * 256, "用户-ユーザー-🙂", " spaced "):
        assert ok(call(http, keys, "app", RESOLVE, {"external_id": ext}))["user_id"] > 0


def test_purge_by_external_id_removes_the_memories_and_the_mapping(http, keys, runtime):
    ext = new_external_id()
    user = ok(call(http, keys, "admin", RESOLVE, {"external_id": ext}))["user_id"]
    body = {"user_id": user, "app_id": "appA", "content": "I keep bees in Porto"}
    ok(call(http, keys, "app", "/memory/v1/add_structured", body))
    assert registry_rows(runtime, "default", user) == 1

    # exactly one id: both or neither is 40001; app keys still may not purge
    both = call(http, keys, "admin", "/memory/v1/purge", {"external_id": ext, "user_id": user})
    assert both["code"] == 40001, both
    assert call(http, keys, "admin", "/memory/v1/purge", {})["code"] == 40001
    assert call(http, keys, "app", "/memory/v1/purge", {"external_id": ext})["code"] == 40101

    purged = ok(call(http, keys, "admin", "/memory/v1/purge", {"external_id": ext}))
    assert purged["deleted"] >= 1 and purged["crypto_shredded"] is True
    live = runtime.memories.load(user, statuses=[Status.ACTIVE], tenant="default")
    assert live == []
    assert registry_rows(runtime, "default", user) == 0
    # the id now names a new user; the old one is not found by it any more
    again = ok(call(http, keys, "app", RESOLVE, {"external_id": ext}))
    assert again["created"] is True and again["user_id"] != user


def test_an_unknown_external_id_is_not_found_and_creates_nothing(http, keys):
    ext = new_external_id()
    for path in ("/memory/v1/purge", "/memory/v1/export"):
        got = call(http, keys, "admin", path, {"external_id": ext})
        assert got["code"] == 40401, got
    assert ok(call(http, keys, "admin", RESOLVE, {"external_id": ext}))["created"] is True


def test_a_lookup_only_resolve_finds_and_never_creates(http, keys):
    ext = new_external_id()
    lookup = {"external_id": ext, "create": False}
    for _ in range(2):  # the first lookup created nothing: the second is 40401 too
        got = call(http, keys, "app", RESOLVE, lookup)
        assert got["code"] == 40401, got
    made = ok(call(http, keys, "app", RESOLVE, {"external_id": ext, "create": True}))
    assert made["created"] is True  # the lookups left no user behind
    found = ok(call(http, keys, "admin", RESOLVE, lookup))
    assert found == {"user_id": made["user_id"], "created": False}
    assert call(http, keys, "t2_admin", RESOLVE, lookup)["code"] == 40401  # another tenant's
    bad = call(http, keys, "app", RESOLVE, {"external_id": ext, "create": "no"})
    assert bad["code"] == 40001 and "create" in bad["msg"], bad


def test_export_by_external_id(http, keys):
    ext = new_external_id()
    user = ok(call(http, keys, "admin", RESOLVE, {"external_id": ext}))["user_id"]
    body = {"user_id": user, "app_id": "appA", "content": "My cat is called Miso"}
    memory_id = ok(call(http, keys, "app", "/memory/v1/add_structured", body))["memory_id"]
    assert call(http, keys, "app", "/memory/v1/export", {"external_id": ext})["code"] == 40101
    export_id = ok(call(http, keys, "admin", "/memory/v1/export", {"external_id": ext}))[
        "export_id"
    ]
    status = wait_for(
        lambda: (
            (d := call(http, keys, "admin", f"/memory/v1/export/{export_id}", method="GET")["data"])
            and d["status"] in ("done", "failed")
            and d
        ),
        what="the export",
    )
    assert status["status"] == "done", status
    lines = [json.loads(x) for x in http.get(status["url"]).content.decode().splitlines() if x]
    assert any(line.get("memory_id") == memory_id for line in lines)


def test_a_resolve_survives_the_loss_of_the_cache(settings, stores, runtime, ingest, keys, http):
    ext = new_external_id()
    user = ok(call(http, keys, "app", RESOLVE, {"external_id": ext}))["user_id"]
    redis = stores.redis.client
    cached = list(redis.scan_iter(match="extid:*", count=1000))
    assert cached
    redis.delete(*cached)  # the cache is gone; the registry is ClickHouse's
    s = settings.model_copy(update={"api_keys_file": keys[0]})
    with api_client(s, stores, runtime) as fresh:  # another API process, cold
        got = ok(call(fresh, keys, "app", RESOLVE, {"external_id": ext}))
    assert got == {"user_id": user, "created": False}
    # a new process's key ring reads the same registry key, so the same token
    fresh_ring = KeyRing.from_settings(settings, stores.clickhouse)
    token = UserRegistry(stores.clickhouse, fresh_ring).token("default", ext)
    assert UserRegistry(stores.clickhouse, fresh_ring).find("default", token) == user


def test_a_registry_key_that_does_not_unwrap_is_never_replaced(stores, runtime, http, keys):
    ok(call(http, keys, "app", RESOLVE, {"external_id": new_external_id()}))  # the key exists
    other = LocalMasterKey(b"another master secret, not this store's")
    ring = KeyRing(stores.clickhouse, other, legacy=LegacyCipher(other.secret))
    with pytest.raises(DecryptionError, match="does not unwrap"):
        UserRegistry(stores.clickhouse, ring).token("default", "alice")
    # the stored key is unchanged: the running API still finds its users
    ext = new_external_id()
    first = ok(call(http, keys, "app", RESOLVE, {"external_id": ext}))
    assert ok(call(http, keys, "app", RESOLVE, {"external_id": ext}))["user_id"] == first["user_id"]
