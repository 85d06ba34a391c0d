"""Schema v4 → v5 (tenants) on real stores: an existing store keeps every row, in tenant
``default``; the switch table gains the tenant in its replacing key; a Milvus collection
made without ``tenant_id`` is copied into the current schema once."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pymilvus import DataType, MilvusClient

from memstream.schemas.storage import SCHEMA_VERSION, TENANT_COLUMN, clickhouse_ddl, milvus_fields
from sinks.clickhouse import ClickHouseStore
from sinks.milvus import MilvusStore

pytestmark = pytest.mark.integration

V4_SETTINGS = """CREATE TABLE {db}.memory_settings (user_id UInt64, app_id String,
    enabled UInt8, updated_at DateTime64(3, 'UTC'), version UInt64)
    ENGINE = ReplacingMergeTree(version) ORDER BY (user_id, app_id)"""


def v4_ddl(db: str) -> list[str]:
    """The store as v4 made it: today's tables without the tenant column (``data_keys``
    had it already), the switch table keyed by user."""
    out = []
    for stmt in clickhouse_ddl(db):
        if "memory_settings" in stmt:
            out.append(V4_SETTINGS.format(db=db))
        elif "ADD COLUMN IF NOT EXISTS tenant_id" not in stmt:
            out.append(stmt if "data_keys" in stmt else stmt.replace(f"{TENANT_COLUMN},", ""))
    return out


def test_a_v4_clickhouse_store_moves_to_tenant_default(settings, stores, unique_name, user_id):
    db = f"mig_{unique_name}"
    ch = stores.clickhouse
    for stmt in v4_ddl(db):
        ch.command(stmt)
    now = datetime.now(UTC)
    ch.command(
        f"INSERT INTO {db}.memories (memory_id, user_id, content, version) "
        f"VALUES ('m_old', {user_id}, 'x', 1)"
    )
    ch.command(f"INSERT INTO {db}.memory_settings VALUES ({user_id}, '*', 0, now64(3), 1)")
    ch.command(f"INSERT INTO {db}.schema_migrations VALUES (4, now64(3))")

    store = ClickHouseStore(settings.clickhouse_target, db)
    for _ in range(2):  # idempotent: a second start changes nothing
        store.setup()
        assert store.schema_version() == SCHEMA_VERSION
        rows = store.query(f"SELECT tenant_id, memory_id FROM {db}.memories")
        assert rows == [("default", "m_old")]
        assert store.query(f"SELECT tenant_id, user_id, enabled FROM {db}.memory_settings") == [
            ("default", user_id, 0)
        ]
    key = store.query(
        "SELECT sorting_key FROM system.tables WHERE database = {d:String} AND name = {t:String}",
        {"d": db, "t": "memory_settings"},
    )
    assert key[0][0].startswith("tenant_id")
    # two tenants' switch rows of one user stay two rows once merged
    store.insert(
        "memory_settings",
        [["t2", user_id, "*", 1, now, 2]],
        ["tenant_id", "user_id", "app_id", "enabled", "updated_at", "version"],
    )
    store.command(f"OPTIMIZE TABLE {db}.memory_settings FINAL")
    got = store.query(f"SELECT tenant_id, enabled FROM {db}.memory_settings FINAL ORDER BY 1")
    assert got == [("default", 0), ("t2", 1)]
    ch.command(f"DROP DATABASE {db}")


def test_a_milvus_collection_without_tenant_id_is_copied_into_the_schema(
    settings, stores, unique_name
):
    name = f"mig_{unique_name}"
    client: MilvusClient = stores.milvus.client
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    for f in milvus_fields(4):  # the v4 collection: every field but tenant_id
        if f.name == "tenant_id":
            continue
        kw: dict = {"max_length": f.max_length} if f.kind == "VARCHAR" else {}
        kw |= {"dim": 4} if f.kind == "FLOAT_VECTOR" else {}
        schema.add_field(
            f.name, getattr(DataType, f.kind), is_primary=f.primary,
            is_partition_key=f.partition_key, **kw,
        )  # fmt: skip
    index = client.prepare_index_params()
    index.add_index(field_name="vector", index_type="FLAT", metric_type="COSINE")
    client.create_collection(name, schema=schema, index_params=index)
    scalars = {"app_id": "a", "session_id": "", "level": "APP", "ownership": "USER",
               "mem_type": "SEMANTIC", "status": "ACTIVE", "is_important": False,
               "tags": {}, "valid_at": 0, "invalid_at": 0}  # fmt: skip
    rows = [
        {"memory_id": f"m{i}", "user_id": "42", "vector": [1.0, 0, 0, i], **scalars}
        for i in range(3)
    ]
    client.insert(name, rows)

    store = MilvusStore(settings.milvus_target, name, 4)
    try:
        store.setup()
        fields = [f["name"] for f in client.describe_collection(name)["fields"]]
        assert "tenant_id" in fields and not client.has_collection(f"{name}__v5")
        got = store.query('tenant_id == "default"', ["memory_id", "tenant_id", "vector"])
        assert sorted(r["memory_id"] for r in got) == ["m0", "m1", "m2"]
        assert store.query('tenant_id == "t2"') == []
        store.setup()  # already current: nothing to do
        assert len(store.query('user_id == "42"')) == 3
    finally:
        client.drop_collection(name)
