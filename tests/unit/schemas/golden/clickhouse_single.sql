CREATE DATABASE IF NOT EXISTS memstream;

CREATE TABLE IF NOT EXISTS memstream.memories (
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
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (user_id, memory_id);

ALTER TABLE memstream.memories ADD COLUMN IF NOT EXISTS source_msg_ids Array(String) AFTER source_msg_id;

ALTER TABLE memstream.memories ADD COLUMN IF NOT EXISTS tenant_id LowCardinality(String) DEFAULT 'default' FIRST;

CREATE TABLE IF NOT EXISTS memstream.memory_changelog (
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
        ) ENGINE = ReplacingMergeTree
        PARTITION BY toYYYYMM(op_time)
        ORDER BY (user_id, change_id);

ALTER TABLE memstream.memory_changelog ADD COLUMN IF NOT EXISTS tenant_id LowCardinality(String) DEFAULT 'default' FIRST;

ALTER TABLE memstream.memories ADD COLUMN IF NOT EXISTS entities String DEFAULT '';

CREATE TABLE IF NOT EXISTS memstream.memory_entities (
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
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (user_id, memory_id, entity_id);

CREATE TABLE IF NOT EXISTS memstream.memory_settings (
            tenant_id LowCardinality(String) DEFAULT 'default',
            user_id UInt64,
            app_id String,
            enabled UInt8,
            updated_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (tenant_id, user_id, app_id);

CREATE TABLE IF NOT EXISTS memstream.store_meta (
            key String,
            value String,
            updated_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY key;

CREATE TABLE IF NOT EXISTS memstream.data_keys (
            tenant_id LowCardinality(String),
            user_id UInt64,
            key_id String,
            wrapped String,
            master_id String,
            created_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (tenant_id, user_id, key_id)
        SETTINGS old_parts_lifetime = 1, cleanup_delay_period = 1,
            cleanup_delay_period_random_add = 0, max_cleanup_delay_period = 1;

CREATE TABLE IF NOT EXISTS memstream.user_registry (
            tenant_id LowCardinality(String),
            lookup String,
            user_id UInt64,
            created_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (tenant_id, lookup)
        SETTINGS old_parts_lifetime = 1, cleanup_delay_period = 1,
            cleanup_delay_period_random_add = 0, max_cleanup_delay_period = 1;

CREATE TABLE IF NOT EXISTS memstream.schema_migrations (
            version UInt32,
            applied_at DateTime64(3, 'UTC')
        ) ENGINE = ReplacingMergeTree
        ORDER BY version;

DROP TABLE IF EXISTS memstream.memory_settings_v5;

CREATE TABLE IF NOT EXISTS memstream.memory_settings_v5 (
            tenant_id LowCardinality(String) DEFAULT 'default',
            user_id UInt64,
            app_id String,
            enabled UInt8,
            updated_at DateTime64(3, 'UTC'),
            version UInt64
        ) ENGINE = ReplacingMergeTree(version)
        ORDER BY (tenant_id, user_id, app_id);

INSERT INTO memstream.memory_settings_v5 (tenant_id, user_id, app_id, enabled, updated_at, version) SELECT 'default', user_id, app_id, enabled, updated_at, version FROM memstream.memory_settings;

EXCHANGE TABLES memstream.memory_settings AND memstream.memory_settings_v5;

DROP TABLE IF EXISTS memstream.memory_settings_v5
