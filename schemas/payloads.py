"""The payload of each `memory.commands` op, one model per op.

The keyed writer's handler registry (``dataflows.ingest.commands``) validates a
command's payload once with its op's model, and the handler gets the model; a payload
that does not validate is refused (40001 to the caller, the command to `memory.dlq`).
Producers build payloads from the same models (``model_dump(mode="json")``), so the
wire format is the JSON these models read: the keys and values commands of earlier
versions carry, unchanged (a command still in Kafka after an upgrade is applied).

Where a key's *presence* means something (``update``'s ``expire_at``: present and null
clears it; a delete's ``scope``), handlers read ``model_fields_set``.
"""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictBool

from schemas.enums import Level, MemType, OpSource, Ownership
from schemas.limits import Content, CustomTags, IdText, MemoryId, ScopeId, StoreTime


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StructuredFields(_Payload):
    """``add_structured``: one memory written directly (docs/api.md#request-fields)."""

    app_id: ScopeId | None = None
    session_id: ScopeId | None = None
    level: Level | None = None
    ownership: Ownership = Ownership.USER
    mem_type: MemType = MemType.SEMANTIC
    content: Content = Field(min_length=1, max_length=8192)
    is_important: StrictBool = False
    expire_at: StoreTime | None = None
    custom_tags: CustomTags = Field(default_factory=dict)


class UpdatePayload(_Payload):
    """``update``: what changes; a key left out keeps its value, ``expire_at`` null
    clears it."""

    memory_id: MemoryId
    content: Content | None = Field(default=None, min_length=1, max_length=8192)
    is_important: StrictBool | None = None
    expire_at: StoreTime | None = None
    custom_tags: CustomTags | None = None


class DeleteScopeSpec(_Payload):
    """A delete's scope, each key as given (``app_id`` present and null: "no app")."""

    app_id: ScopeId | None = None
    level: Level | None = None
    session_id: ScopeId | None = None


class Access(_Payload):
    """What an app key may change (``recall_api.access.Caller.access_payload``)."""

    model_config = ConfigDict(populate_by_name=True)

    apps: list[IdText] = Field(default_factory=list)
    global_grant: StrictBool = Field(default=False, alias="global")


class DeletePayload(_Payload):
    """``delete`` (delete, batch_delete, purge): by ``memory_ids`` or by ``scope``,
    narrowed to ``access`` (absent: an admin key); ``shred``: the whole-user purge."""

    memory_ids: list[MemoryId] | None = None
    scope: DeleteScopeSpec | None = None
    access: Access | None = None
    reason: str | None = None
    source: OpSource = OpSource.USER
    shred: StrictBool = False


class SessionClosePayload(_Payload):
    """``session_close``: promote the valuable SESSION memories, drop the rest."""

    session_id: ScopeId
    app_id: ScopeId | None = None
    promote_ids: list[MemoryId] = Field(default_factory=list, max_length=1000)
    pending: StrictBool = False


class LifecyclePayload(_Payload):
    """``lifecycle``: one user's share of a pass; change ids derive from ``pass_id``."""

    now: AwareDatetime
    pass_id: str = Field(min_length=1, max_length=200)
    memory_ids: list[str] = Field(max_length=100_000)
    reply: bool = True


class RecallHitsPayload(_Payload):
    """``recall_hits``: hit counts per memory, and the latest hit time."""

    at: AwareDatetime
    hits: dict[str, int] = Field(max_length=100_000)
    reply: bool = True


class ConsolidatePayload(_Payload):
    """``consolidate``: merge the user's scopes above the high-water mark."""

    now: AwareDatetime
    pass_id: str = Field(min_length=1, max_length=200)
    reply: bool = True
