"""Storage layout: ClickHouse DDL (DESIGN §5) and the Milvus collection description.

Bump ``SCHEMA_VERSION`` with any change below; sinks record the version they applied
in ``schema_migrations`` and refuse to run against a newer store.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_VERSION = 5  # 2: memories.source_msg_ids; 3: store_meta; 4: data_keys; 5: tenant_id

MEMORY_COLUMNS: tuple[str, ...] = (
    "tenant_id", "memory_id", "user_id", "app_id", "session_id", "level", "ownership", "mem_type",
    "content", "content_hash", "weight", "weight_at", "status", "is_important",
    "recall_count", "created_at", "updated_at", "last_recalled_at", "expire_at",
    "archived_at", "deleted_at", "valid_at", "invalid_at", "superseded_by",
    "source_session_id", "source_msg_id", "source_msg_ids", "custom_tags", "vector_ref",
    "version",
)  # fmt: skip

CHANGELOG_COLUMNS: tuple[str, ...] = (
    "tenant_id", "change_id", "memory_id", "user_id", "app_id", "level", "op_type", "content_before",
    "content_after", "reason", "op_source", "op_time", "task_id", "sanitized",
)  # fmt: skip


TENANT_COLUMN = "tenant_id LowCardinality(String) DEFAULT 'default'"
SETTINGS_TABLE = "memory_settings"
TENANT_TABLES = ("memories", "memory_changelog", "memory_settings", "data_keys")


def settings_ddl(db: str, table: str = SETTINGS_TABLE) -> str:
    """Switch rows, one per (tenant, user, app): the tenant is part of the replacing key."""
    return f"""CREATE TABLE IF NOT EXISTS {db}.{table} (
            {TENANT_COLUMN},
            user_id UInt64,
            app_id String,
            enabled UInt8,
            updated_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (tenant_id, user_id, app_id)"""


def clickhouse_ddl(db: str) -> list[str]:
    """Statements that create the database and its tables; each is idempotent.

    v4 → v5 (tenants): ``memories`` and ``memory_changelog`` gain ``tenant_id`` (old rows
    read ``default``). Their replacing keys stay ``(user_id, memory_id)`` and
    ``(user_id, change_id)``: a memory id is derived with its tenant (``schemas.tenants.
    id_parts``), so no two tenants share one. ``memory_settings`` has no such id: its key
    must hold the tenant, so an old table is rebuilt (``ClickHouseStore._migrate_settings``).
    """
    ts = "DateTime64(3, 'UTC')"
    return [
        f"CREATE DATABASE IF NOT EXISTS {db}",
        f"""CREATE TABLE IF NOT EXISTS {db}.memories (
            {TENANT_COLUMN},
            memory_id String,
            user_id UInt64,
            app_id Nullable(String),
            session_id Nullable(String),
            level LowCardinality(String),
            ownership LowCardinality(String),
            mem_type LowCardinality(String),
            content String,
            content_hash String,
            weight Float64,
            weight_at {ts},
            status LowCardinality(String),
            is_important UInt8,
            recall_count UInt32,
            created_at {ts},
            updated_at {ts},
            last_recalled_at Nullable({ts}),
            expire_at Nullable({ts}),
            archived_at Nullable({ts}),
            deleted_at Nullable({ts}),
            valid_at {ts},
            invalid_at Nullable({ts}),
            superseded_by Nullable(String),
            source_session_id Nullable(String),
            source_msg_id Nullable(String),
            source_msg_ids Array(String),
            custom_tags String,
            vector_ref String,
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (user_id, memory_id)""",
        # v1 → v2: a store made before consolidation gains the column (idempotent).
        f"ALTER TABLE {db}.memories ADD COLUMN IF NOT EXISTS source_msg_ids Array(String) "
        "AFTER source_msg_id",
        f"ALTER TABLE {db}.memories ADD COLUMN IF NOT EXISTS {TENANT_COLUMN} FIRST",
        f"""CREATE TABLE IF NOT EXISTS {db}.memory_changelog (
            {TENANT_COLUMN},
            change_id String,
            memory_id String,
            user_id UInt64,
            app_id Nullable(String),
            level LowCardinality(String),
            op_type LowCardinality(String),
            content_before String,
            content_after String,
            reason String,
            op_source LowCardinality(String),
            op_time {ts},
            task_id String,
            sanitized UInt8
        ) ENGINE = ReplacingMergeTree
        PARTITION BY toYYYYMM(op_time)
        ORDER BY (user_id, change_id)""",
        f"ALTER TABLE {db}.memory_changelog ADD COLUMN IF NOT EXISTS {TENANT_COLUMN} FIRST",
        settings_ddl(db),
        # v2 → v3: facts about the store itself, key → JSON value (the embedding model
        # that made the vectors of a Milvus collection, a re-embed checkpoint); see
        # sinks/store_model.py. An empty value is a deleted key.
        f"""CREATE TABLE IF NOT EXISTS {db}.store_meta (
            key String,
            value String,
            updated_at {ts},
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY key""",
        # v3 → v4: the wrapped per-(tenant, user) data keys (sinks/keyring.py). Purge
        # erases a user's rows with a mutation; outdated parts are removed within about
        # a second (not the default 8 minutes), so the wrapped key leaves the disk too.
        f"""CREATE TABLE IF NOT EXISTS {db}.data_keys (
            tenant_id LowCardinality(String),
            user_id UInt64,
            key_id String,
            wrapped String,
            master_id String,
            created_at {ts},
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (tenant_id, user_id, key_id)
        SETTINGS old_parts_lifetime = 1, cleanup_delay_period = 1,
            cleanup_delay_period_random_add = 0, max_cleanup_delay_period = 1""",
        f"""CREATE TABLE IF NOT EXISTS {db}.schema_migrations (
            version UInt32,
            applied_at {ts}
        ) ENGINE = ReplacingMergeTree
        ORDER BY version""",
    ]


@dataclass(frozen=True)
class MilvusField:
    name: str
    kind: str  # VARCHAR | INT64 | BOOL | JSON | FLOAT_VECTOR
    max_length: int = 0
    primary: bool = False
    partition_key: bool = False
    default: str | None = None  # a row written without the field holds this


def milvus_fields(dim: int) -> list[MilvusField]:
    """Fields of the `memories` collection: active and archived vectors, `status` filters."""
    return [
        MilvusField("memory_id", "VARCHAR", 64, primary=True),
        MilvusField("user_id", "VARCHAR", 24, partition_key=True),
        MilvusField("tenant_id", "VARCHAR", 64, default="default"),
        MilvusField("vector", "FLOAT_VECTOR", dim),
        MilvusField("app_id", "VARCHAR", 128),
        MilvusField("session_id", "VARCHAR", 128),
        MilvusField("level", "VARCHAR", 16),
        MilvusField("ownership", "VARCHAR", 16),
        MilvusField("mem_type", "VARCHAR", 16),
        MilvusField("status", "VARCHAR", 16),
        MilvusField("is_important", "BOOL"),
        MilvusField("tags", "JSON"),
        MilvusField("valid_at", "INT64"),
        MilvusField("invalid_at", "INT64"),
    ]


MILVUS_SCALAR_INDEXES = ("status", "app_id", "level", "tenant_id")
