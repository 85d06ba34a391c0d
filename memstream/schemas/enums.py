"""Enumerations of the data model (docs/architecture.md#stores)."""

from __future__ import annotations

from enum import StrEnum


class Level(StrEnum):
    GLOBAL = "GLOBAL"
    APP = "APP"
    SESSION = "SESSION"


class Ownership(StrEnum):
    USER = "USER"
    AGENT = "AGENT"


class MemType(StrEnum):
    SEMANTIC = "SEMANTIC"
    EPISODIC = "EPISODIC"
    PROCEDURAL = "PROCEDURAL"
    # Derived: the user's profile, which memstream writes and keeps current from the
    # user's memories (docs/architecture.md#the-profile). Never written by a caller or an
    # extraction; not recalled; exempt from capacity, decay, consolidation and eviction.
    PROFILE = "PROFILE"
    # Keyed: an agent's key-value item (docs/architecture.md#key-value-items), written and
    # replaced by key through items/put. Not recalled; exempt from dedup, capacity, decay,
    # consolidation and eviction; never feeds the profile or the entities.
    ITEM = "ITEM"


DERIVED_TYPES = frozenset({MemType.PROFILE})
KEYED_TYPES = frozenset({MemType.ITEM})
# The kinds that are not the user's ordinary memories: never in the hot index, recall,
# the capacity counters or a lifecycle pass.
APART_TYPES = DERIVED_TYPES | KEYED_TYPES


class Status(StrEnum):
    ACTIVE = "ACTIVE"
    ARCHIVED = "ARCHIVED"
    DELETED = "DELETED"
    SUPERSEDED = "SUPERSEDED"


class OpType(StrEnum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    MERGE = "MERGE"
    SUPERSEDE = "SUPERSEDE"
    ARCHIVE = "ARCHIVE"
    RESTORE = "RESTORE"
    PURGE = "PURGE"
    NONE = "NONE"


class OpSource(StrEnum):
    SYSTEM = "SYSTEM"
    USER = "USER"
    ADMIN = "ADMIN"


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"


class Evolution(StrEnum):
    DECIDE = "decide"
    APPEND = "append"
