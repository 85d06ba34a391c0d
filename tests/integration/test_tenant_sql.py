"""`POST /admin/v1/sql` with the admin keys of two tenants, through HTTP on the real stack.

Each spelling of the security test's escapes (issue 31, L1: ``merge`` behind a comment,
``data_keys``, quoted ``system`` tables, ``SETTINGS``, a CTE shadowing a table, ``IN
<table>``) answers 40001 naming what was refused; every allowed spelling (unqualified,
quoted, joined, in a CTE or subquery, ``UNION ALL``) answers the caller's rows only. In
local mode (no keys) the SQL still reads every table, one statement at a time.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from core.derived import is_profile_id, profile_id
from recall_api.state import api_state
from sinks import keystore
from tests.helpers.api_client import api_client

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    path = tmp_path_factory.mktemp("tenant_sql_keys") / "api_keys.json"

    def make(tenant, role="app", apps=()):
        key, _ = keystore.create(path, tenant, role, list(apps), global_grant=False, now=NOW)
        return key

    made = {
        "t1_admin": make("t1", "admin"),
        "t1_app": make("t1", apps=["appA"]),
        "t2_admin": make("t2", "admin"),
        "t2_app": make("t2", apps=["appA"]),
    }
    return path, made


@pytest.fixture(scope="module")
def http(settings, stores, runtime, ingest, keys):
    s = settings.model_copy(update={"api_keys_file": keys[0]})
    with api_client(s, stores, runtime, client=("127.0.0.1", 40001)) as client:
        yield client


def call(http, keys, who: str, path: str, body: dict) -> dict:
    return http.post(path, json=body, headers={"Authorization": f"Bearer {keys[1][who]}"}).json()


def ok(got: dict) -> dict:
    assert got["code"] == 0, got
    return got["data"]


@pytest.fixture(scope="module")
def seeded(http, keys):
    """A memory and a switch row of one user id in each tenant: {tenant: memory_id}."""
    user_id = (random.getrandbits(40) << 20) + 1
    ids = {}
    for tenant in ("t1", "t2"):
        body = {"user_id": user_id, "app_id": "appA", "content": f"I keep bees, says {tenant}"}
        ids[tenant] = ok(call(http, keys, f"{tenant}_app", "/memory/v1/add_structured", body))[
            "memory_id"
        ]
        switch = {"user_id": user_id, "enabled": True}
        ok(call(http, keys, f"{tenant}_admin", "/memory/v1/switch", switch))
    return user_id, ids


def _profiles(tenant: str, user_id: int) -> set[str]:
    """The ids of the profiles the seeded user may have in ``tenant``: GLOBAL's and appA's."""
    return {profile_id(tenant, user_id, app) for app in (None, "appA")}


def escapes(db: str) -> list[tuple[str, str]]:
    """(query, what the refusal names): the issue's spellings and their relatives."""
    return [
        (f"SELECT tenant_id, count() FROM/**/merge('{db}', '^memories$') GROUP BY tenant_id",
         "merge"),
        (f"SELECT tenant_id, user_id, app_id, memory_id, task_id FROM "
         f"merge/**/('{db}', '^memory_changelog$')", "merge"),
        (f"SELECT tenant_id, user_id, key_id FROM -- c\nmerge('{db}', '^data_keys$')", "merge"),
        (f"SELECT tenant_id, user_id, key_id FROM {db}.data_keys", "data_keys"),
        ("SELECT tenant_id, user_id FROM data_keys", "data_keys"),
        ("SELECT count() FROM `system`.tables", "system.tables"),
        ('SELECT count() FROM "system"."tables"', "system.tables"),
        ("SELECT memory_id FROM memories UNION ALL SELECT name FROM system.tables",
         "system.tables"),
        (f"SELECT * FROM {db}.memories SETTINGS additional_table_filters = {{}}", "SETTINGS"),
        (f"WITH memories AS (SELECT * FROM merge('{db}', '^memories$')) "
         "SELECT tenant_id FROM memories", "merge"),
        (f"SELECT memory_id FROM memories WHERE user_id IN {db}.data_keys", "IN"),
        (f"SELECT memory_id FROM {db}.memories WHERE user_id IN (SELECT user_id "
         f"FROM remote('127.0.0.1', {db}.memories))", "remote"),
        (f"SELECT dictGet('{db}.d', 'x', toUInt64(1))", "dictGet"),
        ("SELECT * FROM memories FORMAT JSON", "FORMAT"),
        ("SELECT 1; SELECT count() FROM system.tables", "one statement"),
        (f"ALTER TABLE {db}.memories DELETE WHERE 1", "SELECT"),
    ]  # fmt: skip


@pytest.mark.parametrize("who", ["t1_admin", "t2_admin"])
def test_every_escape_of_the_security_test_answers_40001_naming_what_it_refused(
    http, keys, seeded, who
):
    user_id, ids = seeded
    theirs = ids["t2" if who == "t1_admin" else "t1"]
    db = api_state(http.app).stores.clickhouse.database
    for query, refused in escapes(db):
        got = call(http, keys, who, "/admin/v1/sql", {"query": query})
        assert got["code"] == 40001 and got["data"] is None, (query, got)
        assert "refused" in got["msg"] and refused.lower() in got["msg"].lower(), (query, got)
        assert theirs not in str(got), (query, got)


def allowed(db: str, user_id: int, m1: str, m2: str) -> list[str]:
    """Queries a tenant may run; each answers (memory id, tenant) rows."""
    pair = f"('{m1}', '{m2}')"
    return [
        f"SELECT memory_id, tenant_id FROM memories WHERE user_id = {user_id}",
        f"SELECT memory_id, tenant_id FROM `{db}`.`memories` WHERE user_id = {user_id}",
        f'SELECT memory_id, tenant_id FROM "{db}"."memory_changelog" WHERE memory_id IN {pair}',
        f"SELECT m.memory_id, c.tenant_id FROM {db}.memories AS m FINAL "
        f"JOIN memory_changelog AS c ON m.memory_id = c.memory_id WHERE m.user_id = {user_id}",
        f"SELECT memory_id, tenant_id FROM memories WHERE memory_id IN "
        f"(SELECT memory_id FROM /**/ memory_changelog WHERE user_id = {user_id})",
        f"WITH data_keys AS (SELECT memory_id, tenant_id FROM memory_changelog) "
        f"SELECT * FROM data_keys WHERE memory_id IN {pair}",
        f"SELECT memory_id, tenant_id FROM memories WHERE memory_id IN {pair} UNION ALL "
        f"SELECT memory_id, tenant_id FROM -- c\n memory_changelog WHERE memory_id IN {pair}",
        f"SELECT s.m, s.t FROM (SELECT memory_id AS m, tenant_id AS t FROM memories "
        f"WHERE user_id = {user_id}) AS s",
    ]


@pytest.mark.parametrize("who", ["t1_admin", "t2_admin"])
def test_every_allowed_spelling_answers_the_callers_rows_only(http, keys, seeded, who):
    user_id, ids = seeded
    tenant = who[:2]
    db = api_state(http.app).stores.clickhouse.database
    profiles = _profiles(tenant, user_id)
    for query in allowed(db, user_id, ids["t1"], ids["t2"]):
        rows = ok(call(http, keys, who, "/admin/v1/sql", {"query": query}))["rows"]
        # the stored profile of the caller's own user is a row of its tenant too
        # (docs/architecture.md#the-profile); no row of the other tenant, profile or not
        assert {r[1] for r in rows} == {tenant}, (query, rows)
        assert {r[0] for r in rows if is_profile_id(r[0])} <= profiles, (query, rows)
        mine = {tuple(r) for r in rows if not is_profile_id(r[0])}
        assert mine == {(ids[tenant], tenant)}, (query, rows)
    # a GROUP BY tenant_id over every table it may read names its own tenant only
    for table in ("memories", "memory_changelog", "memory_settings"):
        query = f"SELECT tenant_id, count() FROM {table} FINAL GROUP BY tenant_id"
        rows = ok(call(http, keys, who, "/admin/v1/sql", {"query": query}))["rows"]
        assert [r[0] for r in rows] == [tenant], (table, rows)
    query = f"SELECT tenant_id, enabled FROM memory_settings FINAL WHERE user_id = {user_id}"
    rows = ok(call(http, keys, who, "/admin/v1/sql", {"query": query}))["rows"]
    assert rows == [[tenant, 1]], rows


def test_local_mode_reads_every_table_one_statement_at_a_time(settings, stores, runtime, seeded):
    user_id, ids = seeded
    db = stores.clickhouse.database
    with api_client(settings, stores, runtime, client=("127.0.0.1", 40001)) as local:
        query = f"SELECT memory_id FROM {db}.memories WHERE user_id = {user_id} ORDER BY 1"
        got = local.post("/admin/v1/sql", json={"query": query + ";"}).json()
        read = {r[0] for r in ok(got)["rows"]}
        assert {m for m in read if not is_profile_id(m)} == set(ids.values())
        # both tenants' stored profiles of the user (docs/architecture.md#the-profile)
        every = _profiles("t1", user_id) | _profiles("t2", user_id)
        assert {profile_id(t, user_id, "appA") for t in ("t1", "t2")} <= read - set(ids.values())
        assert read - set(ids.values()) <= every
        got = local.post("/admin/v1/sql", json={"query": "SELECT count() FROM system.one"})
        assert ok(got.json())["rows"] == [[1]]
        got = local.post("/admin/v1/sql", json={"query": "SELECT 1; SELECT 2"}).json()
        assert got["code"] == 40001 and "one statement" in got["msg"], got
        got = local.post("/admin/v1/sql", json={"query": "SELECT ';' AS s -- end"}).json()
        assert ok(got)["rows"] == [[";"]]
