"""Kafka event shapes (docs/architecture.md#kafka-topics). Frozen: a message never changes
once parsed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memstream.schemas.enums import Evolution, Level, Ownership, Role
from memstream.schemas.limits import (  # noqa: F401  (UINT64_MAX re-exported)
    UINT64_MAX,
    Content,
    CustomTags,
    IdText,
    ScopeId,
    StoreTime,
    Text,
    UserId,
)
from memstream.schemas.tenants import DEFAULT_TENANT, TenantId


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Message(Frozen):
    """One turn. ``name`` is the speaker's display name (OpenAI chat convention): facts
    about a named speaker name them. ``ts`` is when it was said: relative dates resolve
    against it and a fact's ``valid_at`` is it (UTC, inside the stores' range)."""

    role: Role
    content: Content = Field(min_length=1)
    name: Text | None = Field(default=None, min_length=1, max_length=128)
    msg_id: IdText | None = None
    ts: StoreTime | None = None


class Strategy(Frozen):
    focus: Text | None = None
    evolution: Evolution = Evolution.DECIDE
    tags: CustomTags = Field(default_factory=dict)
    entity_types: list[Text] = Field(default_factory=list)


class Conversation(Frozen):
    """The turns and where they belong: what a caller says in an ``add``
    (``memstream.schemas.requests.AddRequest``) and the heart of the event it becomes."""

    user_id: UserId
    app_id: ScopeId | None = None
    session_id: ScopeId | None = None
    ownership: Ownership = Ownership.USER
    level: Level | None = None
    messages: list[Message] = Field(min_length=1)
    strategy: Strategy | None = None


class ConversationEvent(Conversation):
    """Value of `memory.conversations`; the API's `add` produces exactly this: the
    caller's ``Conversation`` with the task and tenant the API gives it."""

    task_id: IdText | None = Field(default=None, min_length=1, max_length=128)
    tenant_id: TenantId = DEFAULT_TENANT  # absent: the default tenant
    ts: StoreTime | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        # an event pickled into a window snapshot before tenants: the default tenant's
        state.get("__dict__", {}).setdefault("tenant_id", DEFAULT_TENANT)
        super().__setstate__(state)

    @model_validator(mode="after")
    def _default_level(self) -> ConversationEvent:
        # GLOBAL when no app_id, APP otherwise (docs/architecture.md#kafka-topics).
        if self.level is None:
            object.__setattr__(self, "level", Level.APP if self.app_id else Level.GLOBAL)
        if self.level is Level.APP and not self.app_id:
            raise ValueError("level APP needs an app_id")
        if self.level is Level.SESSION and not self.session_id:
            raise ValueError("level SESSION needs a session_id")
        return self


class RecallHits(Frozen):
    """Value of `memory.recall_hits`."""

    user_id: UserId
    memory_ids: list[IdText]
    at: datetime
    tenant_id: TenantId = DEFAULT_TENANT


class ChangeEvent(Frozen):
    """Value of `memory.changes`: one per applied mutation."""

    op: str
    memory_id: str
    user_id: int
    scope: dict[str, str | None]  # level, app_id
    at: datetime
    change_id: str | None = None
    task_id: str | None = None
    origin: str | None = None  # the writer (MemoryStore) that applied it
    tenant_id: TenantId = DEFAULT_TENANT


TOPIC_CONVERSATIONS = "memory.conversations"
TOPIC_COMMANDS = "memory.commands"
TOPIC_RECALL_HITS = "memory.recall_hits"
TOPIC_CHANGES = "memory.changes"
TOPIC_DLQ = "memory.dlq"
TOPIC_CONFIG = "memory.config"  # compacted: the live thresholds (core.live_config)
ALL_TOPICS = (
    TOPIC_CONVERSATIONS,
    TOPIC_COMMANDS,
    TOPIC_RECALL_HITS,
    TOPIC_CHANGES,
    TOPIC_DLQ,
    TOPIC_CONFIG,
)


def topic(prefix: str, name: str) -> str:
    """The deployed name of a topic (``prefix`` is usually empty;
    docs/architecture.md#kafka-topics)."""
    return prefix + name
