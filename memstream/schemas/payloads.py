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

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    model_validator,
)

from memstream.schemas.enums import Level, MemType, OpSource, Ownership
from memstream.schemas.limits import (
    Content,
    CustomTags,
    IdText,
    MemoryId,
    ScopeId,
    StoreTime,
    WrittenType,
    not_blank,
)


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StructuredFields(_Payload):
    """``add_structured``: one memory written directly (docs/api.md#request-fields)."""

    app_id: ScopeId | None = None
    session_id: ScopeId | None = None
    level: Level | None = None
    ownership: Ownership = Ownership.USER
    mem_type: WrittenType = MemType.SEMANTIC
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


class ProfileSummaryPayload(_Payload):
    """``profile_summary``: summarise a scope's stored profile with the LLM, when it is
    still the plan ``plan`` names (its content hash); sent by the writer after it wrote
    that plan (docs/architecture.md#the-profile)."""

    app_id: ScopeId | None = None
    plan: str = Field(min_length=1, max_length=128)


# --- entities (docs/api.md#entityupdate) --------------------------------------------------

ENTITY_UPDATE_OP = "entity_update"
ENTITIES_BACKFILL_OP = "entities_backfill"
EntityOp = Literal["rename", "merge", "split"]
EntityRef = Annotated[IdText, StringConstraints(min_length=1, max_length=128)]
# a name or type as a caller writes it: visible text, trimmed
EntityText = Annotated[
    str,
    StringConstraints(strict=True, strip_whitespace=True, min_length=1, max_length=256),
    AfterValidator(not_blank),
]
EntityType = Annotated[EntityText, StringConstraints(max_length=64)]
MAX_SPLIT_IDS = 1000


def entity_update_problem(
    op: str,
    entity_id: str,
    name: str | None,
    type_: str | None,
    into: str | None,
    memory_ids: list[str] | None,
) -> str | None:
    """Why an ``entity/update`` body cannot be applied as given (40001), else None: each
    op needs its own fields and takes no other's."""
    if op == "rename":
        if name is None and type_ is None:
            return "rename needs name (and/or type)"
        if into is not None or memory_ids is not None:
            return "rename takes name and type only"
    elif op == "merge":
        if into is None:
            return "merge needs into: the entity_id that absorbs entity_id"
        if into == entity_id:
            return "merge into itself: into must be another entity"
        if name is not None or type_ is not None or memory_ids is not None:
            return "merge takes into only"
    elif op == "split":
        if not memory_ids:
            return "split needs memory_ids: the memories that leave entity_id"
        if into is not None:
            return "split takes memory_ids, name and type only"
    return None


class EntityUpdatePayload(_Payload):
    """``entity_update``: a caller's correction of resolution (rename, merge, split),
    narrowed to what ``access`` may change (absent: an admin key)."""

    op: EntityOp
    entity_id: EntityRef
    name: EntityText | None = None
    type: EntityType | None = None
    into: EntityRef | None = None
    memory_ids: list[MemoryId] | None = Field(default=None, max_length=MAX_SPLIT_IDS)
    access: Access | None = None

    @model_validator(mode="after")
    def _fields_of_op(self) -> EntityUpdatePayload:
        problem = entity_update_problem(
            self.op, self.entity_id, self.name, self.type, self.into, self.memory_ids
        )
        if problem:
            raise ValueError(problem)
        return self


class EntitiesBackfillPayload(_Payload):
    """``entities_backfill``: link the entities of these memories of one user, stored
    before entities were extracted (``memstream entities backfill``); a memory that has
    links already, or is no longer ACTIVE/ARCHIVED, is left as it is."""

    memory_ids: list[MemoryId] = Field(min_length=1, max_length=10_000)
