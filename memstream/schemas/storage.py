"""Storage layout: ClickHouse DDL (docs/architecture.md#stores) and the Milvus collection
description.

Bump ``SCHEMA_VERSION`` with any change below; sinks record the version they applied
in ``schema_migrations`` and refuse to run against a newer store.
"""

from __future__ import annotations

from dataclasses import dataclass

from memstream.schemas.ch_layout import Layout, Table

SCHEMA_VERSION = 7  # 2: source_msg_ids; 3: store_meta; 4: data_keys; 5: tenant_id; 6: entities
# 7: user_registry

MEMORY_COLUMNS: tuple[str, ...] = (
    "tenant_id", "memory_id", "user_id", "app_id", "session_id", "level", "ownership", "mem_type",
    "content", "content_hash", "weight", "weight_at", "status", "is_important",
    "recall_count", "created_at", "updated_at", "last_recalled_at", "expire_at",
    "archived_at", "deleted_at", "valid_at", "invalid_at", "superseded_by",
    "source_session_id", "source_msg_id", "source_msg_ids", "custom_tags", "vector_ref",
    "version", "entities",
)  # fmt: skip

# One row per (memory, entity) link (docs/architecture.md#entities): the memory's scope,
# status and validity beside the entity, so an analyst's SQL gathers an entity's
# memories without reading the sealed content. ``name`` and ``said`` are sealed as the
# content is; ``status`` is the memory's, or UNLINKED once an edit dropped the link.
ENTITY_COLUMNS: tuple[str, ...] = (
    "tenant_id", "user_id", "app_id", "memory_id", "entity_id", "name", "type", "said",
    "status", "valid_at", "invalid_at", "version",
)  # fmt: skip
ENTITIES_TABLE = "memory_entities"

CHANGELOG_COLUMNS: tuple[str, ...] = (
    "tenant_id", "change_id", "memory_id", "user_id", "app_id", "level", "op_type", "content_before",
    "content_after", "reason", "op_source", "op_time", "task_id", "sanitized",
)  # fmt: skip


TENANT_COLUMN = "tenant_id LowCardinality(String) DEFAULT 'default'"
SETTINGS_TABLE = "memory_settings"
# The external-id registry (docs/architecture.md#external-user-ids): one row per resolved
# external id, found by a keyed token of it, never the id itself.
REGISTRY_TABLE = "user_registry"
TENANT_TABLES = (
    "memories", "memory_changelog", "memory_settings", "data_keys", ENTITIES_TABLE, REGISTRY_TABLE
)  # fmt: skip
TABLES = (*TENANT_TABLES, "store_meta", "schema_migrations")  # every table of the schema
# What a tenant's SQL may read (core.sql_guard): its user tables, not data_keys (the wrapped
# keys are the server's to use, not an analyst's to read) nor the external-id registry.
SQL_TABLES = ("memories", "memory_changelog", "memory_settings", ENTITIES_TABLE)
_TS = "DateTime64(3, 'UTC')"
# Per-user tables are sharded by the user (see memstream/schemas/ch_layout.py for why the hash).
_BY_USER = "cityHash64(user_id)"


def _settings_table(name: str) -> Table:
    return Table(
        name,
        f"""
            {TENANT_COLUMN},
            user_id UInt64,
            app_id String,
            enabled UInt8,
            updated_at {_TS},
            version UInt64
        """,
        "ReplacingMergeTree",
        "version",
        "ORDER BY (tenant_id, user_id, app_id)",
        _BY_USER,
    )


def settings_ddl(db: str, table: str = SETTINGS_TABLE, cluster: str = "") -> list[str]:
    """Switch rows, one per (tenant, user, app): the tenant is part of the replacing key."""
    return Layout(db, cluster).create(_settings_table(table))


def settings_rebuild(db: str, cluster: str = "") -> list[str]:
    """v4 → v5: the statements that rebuild a ``memory_settings`` whose replacing key lacks
    the tenant (a key cannot gain a column that has a default). Rows move to tenant
    ``default``; the tables are swapped in one step, so a crash leaves the old or the new
    one. On a cluster the copy goes through a Distributed table with the same sharding
    key (every row returns to its shard) and the local tables are swapped ``ON
    CLUSTER``; the Distributed ``memory_settings`` gains the column in ``settings_done``.
    (The swapped-in local table keeps its Keeper path, ``…/memory_settings_v5``; the old
    one's path is freed when ``settings_done`` drops it. A cluster store starts at v5, so
    this runs on a cluster only if one was made by hand in the v4 shape.)"""
    lay, new = Layout(db, cluster), f"{SETTINGS_TABLE}_v5"
    cols = "user_id, app_id, enabled, updated_at, version"
    return [
        *lay.drop(new),
        *settings_ddl(db, new, cluster),
        f"INSERT INTO {lay.table(new)} (tenant_id, {cols}) SELECT 'default', {cols} "
        f"FROM {lay.table(SETTINGS_TABLE)}",
        f"EXCHANGE TABLES {lay.local(SETTINGS_TABLE)} AND {lay.local(new)}{lay.on_cluster}",
    ]


def settings_done(db: str, cluster: str = "") -> list[str]:
    """What runs after the check, rebuilt or not (idempotent): the temporary table goes;
    on a cluster the Distributed ``memory_settings`` shows ``tenant_id`` (a no-op unless a
    rebuild swapped the local tables under it)."""
    lay = Layout(db, cluster)
    done = lay.drop(f"{SETTINGS_TABLE}_v5")
    if cluster:
        done.insert(
            0,
            f"ALTER TABLE {lay.table(SETTINGS_TABLE)}{lay.on_cluster} "
            f"ADD COLUMN IF NOT EXISTS {TENANT_COLUMN} FIRST",
        )
    return done


def clickhouse_ddl(db: str, cluster: str = "") -> list[str]:
    """Statements that create the database and its tables; each is idempotent
    (``IF NOT EXISTS`` everywhere). ``cluster``: the same schema as replicated local
    tables plus Distributed tables under the names queries use (memstream/schemas/ch_layout.py).

    v4 → v5 (tenants): ``memories`` and ``memory_changelog`` gain ``tenant_id`` (old rows
    read ``default``). Their replacing keys stay ``(user_id, memory_id)`` and
    ``(user_id, change_id)``: a memory id is derived with its tenant (``memstream.schemas.tenants.
    id_parts``), so no two tenants share one. ``memory_settings`` has no such id: its key
    must hold the tenant, so an old table is rebuilt (``settings_rebuild``).
    """
    lay = Layout(db, cluster)
    return [
        lay.create_database(),
        *lay.create(
            Table(
                "memories",
                f"""
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
            weight_at {_TS},
            status LowCardinality(String),
            is_important UInt8,
            recall_count UInt32,
            created_at {_TS},
            updated_at {_TS},
            last_recalled_at Nullable({_TS}),
            expire_at Nullable({_TS}),
            archived_at Nullable({_TS}),
            deleted_at Nullable({_TS}),
            valid_at {_TS},
            invalid_at Nullable({_TS}),
            superseded_by Nullable(String),
            source_session_id Nullable(String),
            source_msg_id Nullable(String),
            source_msg_ids Array(String),
            custom_tags String,
            vector_ref String,
            version UInt64
        """,
                "ReplacingMergeTree",
                "version",
                "ORDER BY (user_id, memory_id)",
                _BY_USER,
            )
        ),
        # v1 → v2: a store made before consolidation gains the column (idempotent).
        *lay.alter(
            "memories",
            "ADD COLUMN IF NOT EXISTS source_msg_ids Array(String) AFTER source_msg_id",
        ),
        *lay.alter("memories", f"ADD COLUMN IF NOT EXISTS {TENANT_COLUMN} FIRST"),
        *lay.create(
            Table(
                "memory_changelog",
                f"""
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
            op_time {_TS},
            task_id String,
            sanitized UInt8
        """,
                "ReplacingMergeTree",
                "",
                "PARTITION BY toYYYYMM(op_time)\n        ORDER BY (user_id, change_id)",
                _BY_USER,
            )
        ),
        *lay.alter("memory_changelog", f"ADD COLUMN IF NOT EXISTS {TENANT_COLUMN} FIRST"),
        # v5 → v6: the entities a memory names (sealed JSON of its EntityLinks), and
        # the entity↔memory table below.
        *lay.alter("memories", "ADD COLUMN IF NOT EXISTS entities String DEFAULT ''"),
        *lay.create(
            Table(
                ENTITIES_TABLE,
                f"""
            {TENANT_COLUMN},
            user_id UInt64,
            app_id Nullable(String),
            memory_id String,
            entity_id String,
            name String,
            type LowCardinality(String),
            said String,
            status LowCardinality(String),
            valid_at {_TS},
            invalid_at Nullable({_TS}),
            version UInt64
        """,
                "ReplacingMergeTree",
                "version",
                "ORDER BY (user_id, memory_id, entity_id)",
                _BY_USER,
            )
        ),
        *settings_ddl(db, cluster=cluster),
        # v2 → v3: facts about the store itself, key → JSON value (the embedding model
        # that made the vectors of a Milvus collection, a re-embed checkpoint); see
        # sinks/store_model.py. An empty value is a deleted key.
        *lay.create(
            Table(
                "store_meta",
                f"""
            key String,
            value String,
            updated_at {_TS},
            version UInt64
        """,
                "ReplacingMergeTree",
                "version",
                "ORDER BY key",
                "cityHash64(key)",
            )
        ),
        # v3 → v4: the wrapped per-(tenant, user) data keys (sinks/keyring.py). Purge
        # erases a user's rows with a mutation; outdated parts are removed within about
        # a second (not the default 8 minutes), so the wrapped key leaves the disk too.
        *lay.create(
            Table(
                "data_keys",
                f"""
            tenant_id LowCardinality(String),
            user_id UInt64,
            key_id String,
            wrapped String,
            master_id String,
            created_at {_TS},
            version UInt64
        """,
                "ReplacingMergeTree",
                "version",
                "ORDER BY (tenant_id, user_id, key_id)\n"
                "        SETTINGS old_parts_lifetime = 1, cleanup_delay_period = 1,\n"
                "            cleanup_delay_period_random_add = 0, max_cleanup_delay_period = 1",
                _BY_USER,
            )
        ),
        # v6 → v7: external user id → user id (sinks/user_registry.py). ``lookup`` is
        # a keyed token of the external id; a purge erases the user's rows with a
        # mutation, and outdated parts leave the disk within about a second (as data_keys).
        *lay.create(
            Table(
                REGISTRY_TABLE,
                f"""
            tenant_id LowCardinality(String),
            lookup String,
            user_id UInt64,
            created_at {_TS},
            version UInt64
        """,
                "ReplacingMergeTree",
                "version",
                "ORDER BY (tenant_id, lookup)\n"
                "        SETTINGS old_parts_lifetime = 1, cleanup_delay_period = 1,\n"
                "            cleanup_delay_period_random_add = 0, max_cleanup_delay_period = 1",
                _BY_USER,
            )
        ),
        *lay.create(
            Table(
                "schema_migrations",
                f"""
            version UInt32,
            applied_at {_TS}
        """,
                "ReplacingMergeTree",
                "",
                "ORDER BY version",
                "cityHash64(version)",
            )
        ),
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
