CREATE DATABASE IF NOT EXISTS memstream ON CLUSTER prod;

CREATE TABLE IF NOT EXISTS memstream.memories_local ON CLUSTER prod (
            tenant_id LowCardinality(String) DEFAULT 'default',
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
            weight_at DateTime64(3, 'UTC'),
            status LowCardinality(String),
            is_important UInt8,
            recall_count UInt32,
            created_at DateTime64(3, 'UTC'),
            updated_at DateTime64(3, 'UTC'),
            last_recalled_at Nullable(DateTime64(3, 'UTC')),
            expire_at Nullable(DateTime64(3, 'UTC')),
            archived_at Nullable(DateTime64(3, 'UTC')),
            deleted_at Nullable(DateTime64(3, 'UTC')),
            valid_at DateTime64(3, 'UTC'),
            invalid_at Nullable(DateTime64(3, 'UTC')),
            superseded_by Nullable(String),
            source_session_id Nullable(String),
            source_msg_id Nullable(String),
            source_msg_ids Array(String),
            custom_tags String,
            vector_ref String,
            version UInt64
        ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/memstream/memories', '{replica}', version)
        ORDER BY (user_id, memory_id);

CREATE TABLE IF NOT EXISTS memstream.memories ON CLUSTER prod AS memstream.memories_local ENGINE = Distributed(prod, memstream, memories_local, cityHash64(user_id));

ALTER TABLE memstream.memories_local ON CLUSTER prod ADD COLUMN IF NOT EXISTS source_msg_ids Array(String) AFTER source_msg_id;

ALTER TABLE memstream.memories ON CLUSTER prod ADD COLUMN IF NOT EXISTS source_msg_ids Array(String) AFTER source_msg_id;

ALTER TABLE memstream.memories_local ON CLUSTER prod ADD COLUMN IF NOT EXISTS tenant_id LowCardinality(String) DEFAULT 'default' FIRST;

ALTER TABLE memstream.memories ON CLUSTER prod ADD COLUMN IF NOT EXISTS tenant_id LowCardinality(String) DEFAULT 'default' FIRST;

CREATE TABLE IF NOT EXISTS memstream.memory_changelog_local ON CLUSTER prod (
            tenant_id LowCardinality(String) DEFAULT 'default',
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
            op_time DateTime64(3, 'UTC'),
            task_id String,
            sanitized UInt8
        ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/memstream/memory_changelog', '{replica}')
        PARTITION BY toYYYYMM(op_time)
        ORDER BY (user_id, change_id);

CREATE TABLE IF NOT EXISTS memstream.memory_changelog ON CLUSTER prod AS memstream.memory_changelog_local ENGINE = Distributed(prod, memstream, memory_changelog_local, cityHash64(user_id));

ALTER TABLE memstream.memory_changelog_local ON CLUSTER prod ADD COLUMN IF NOT EXISTS tenant_id LowCardinality(String) DEFAULT 'default' FIRST;

ALTER TABLE memstream.memory_changelog ON CLUSTER prod ADD COLUMN IF NOT EXISTS tenant_id LowCardinality(String) DEFAULT 'default' FIRST;

ALTER TABLE memstream.memories_local ON CLUSTER prod ADD COLUMN IF NOT EXISTS entities String DEFAULT '';

ALTER TABLE memstream.memories ON CLUSTER prod ADD COLUMN IF NOT EXISTS entities String DEFAULT '';

CREATE TABLE IF NOT EXISTS memstream.memory_entities_local ON CLUSTER prod (
            tenant_id LowCardinality(String) DEFAULT 'default',
            user_id UInt64,
            app_id Nullable(String),
            memory_id String,
            entity_id String,
            name String,
            type LowCardinality(String),
            said String,
            status LowCardinality(String),
            valid_at DateTime64(3, 'UTC'),
            invalid_at Nullable(DateTime64(3, 'UTC')),
            version UInt64
        ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/memstream/memory_entities', '{replica}', version)
        ORDER BY (user_id, memory_id, entity_id);

CREATE TABLE IF NOT EXISTS memstream.memory_entities ON CLUSTER prod AS memstream.memory_entities_local ENGINE = Distributed(prod, memstream, memory_entities_local, cityHash64(user_id));

CREATE TABLE IF NOT EXISTS memstream.memory_settings_local ON CLUSTER prod (
            tenant_id LowCardinality(String) DEFAULT 'default',
            user_id UInt64,
            app_id String,
            enabled UInt8,
            updated_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/memstream/memory_settings', '{replica}', version)
        ORDER BY (tenant_id, user_id, app_id);

CREATE TABLE IF NOT EXISTS memstream.memory_settings ON CLUSTER prod AS memstream.memory_settings_local ENGINE = Distributed(prod, memstream, memory_settings_local, cityHash64(user_id));

CREATE TABLE IF NOT EXISTS memstream.store_meta_local ON CLUSTER prod (
            key String,
            value String,
            updated_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/memstream/store_meta', '{replica}', version)
        ORDER BY key;

CREATE TABLE IF NOT EXISTS memstream.store_meta ON CLUSTER prod AS memstream.store_meta_local ENGINE = Distributed(prod, memstream, store_meta_local, cityHash64(key));

CREATE TABLE IF NOT EXISTS memstream.data_keys_local ON CLUSTER prod (
            tenant_id LowCardinality(String),
            user_id UInt64,
            key_id String,
            wrapped String,
            master_id String,
            created_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/memstream/data_keys', '{replica}', version)
        ORDER BY (tenant_id, user_id, key_id)
        SETTINGS old_parts_lifetime = 1, cleanup_delay_period = 1,
            cleanup_delay_period_random_add = 0, max_cleanup_delay_period = 1;

CREATE TABLE IF NOT EXISTS memstream.data_keys ON CLUSTER prod AS memstream.data_keys_local ENGINE = Distributed(prod, memstream, data_keys_local, cityHash64(user_id));

CREATE TABLE IF NOT EXISTS memstream.user_registry_local ON CLUSTER prod (
            tenant_id LowCardinality(String),
            lookup String,
            user_id UInt64,
            created_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/memstream/user_registry', '{replica}', version)
        ORDER BY (tenant_id, lookup)
        SETTINGS old_parts_lifetime = 1, cleanup_delay_period = 1,
            cleanup_delay_period_random_add = 0, max_cleanup_delay_period = 1;

CREATE TABLE IF NOT EXISTS memstream.user_registry ON CLUSTER prod AS memstream.user_registry_local ENGINE = Distributed(prod, memstream, user_registry_local, cityHash64(user_id));

CREATE TABLE IF NOT EXISTS memstream.schema_migrations_local ON CLUSTER prod (
            version UInt32,
            applied_at DateTime64(3, 'UTC')
        ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/memstream/schema_migrations', '{replica}')
        ORDER BY version;

CREATE TABLE IF NOT EXISTS memstream.schema_migrations ON CLUSTER prod AS memstream.schema_migrations_local ENGINE = Distributed(prod, memstream, schema_migrations_local, cityHash64(version));

DROP TABLE IF EXISTS memstream.memory_settings_v5 ON CLUSTER prod SYNC;

DROP TABLE IF EXISTS memstream.memory_settings_v5_local ON CLUSTER prod SYNC;

CREATE TABLE IF NOT EXISTS memstream.memory_settings_v5_local ON CLUSTER prod (
            tenant_id LowCardinality(String) DEFAULT 'default',
            user_id UInt64,
            app_id String,
            enabled UInt8,
            updated_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/memstream/memory_settings_v5', '{replica}', version)
        ORDER BY (tenant_id, user_id, app_id);

CREATE TABLE IF NOT EXISTS memstream.memory_settings_v5 ON CLUSTER prod AS memstream.memory_settings_v5_local ENGINE = Distributed(prod, memstream, memory_settings_v5_local, cityHash64(user_id));

INSERT INTO memstream.memory_settings_v5 (tenant_id, user_id, app_id, enabled, updated_at, version) SELECT 'default', user_id, app_id, enabled, updated_at, version FROM memstream.memory_settings;

EXCHANGE TABLES memstream.memory_settings_local AND memstream.memory_settings_v5_local ON CLUSTER prod;

ALTER TABLE memstream.memory_settings ON CLUSTER prod ADD COLUMN IF NOT EXISTS tenant_id LowCardinality(String) DEFAULT 'default' FIRST;

DROP TABLE IF EXISTS memstream.memory_settings_v5 ON CLUSTER prod SYNC;

DROP TABLE IF EXISTS memstream.memory_settings_v5_local ON CLUSTER prod SYNC
