"""Typed shapes shared by every part of memstream, and nothing else.

Pydantic models for API requests and responses and for the Kafka events
(docs/architecture.md#kafka-topics), the enums of the data model (levels, ownership,
memory types, statuses, operations), the API error codes, and the storage schema: the
ClickHouse DDL and the Milvus collection layout with their schema version. This package
imports nothing of ours, so every other package can depend on it.
"""
