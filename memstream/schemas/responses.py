"""The ``data`` of each HTTP API answer (docs/api.md#endpoints): what the routes declare
(``response_model=Envelope[...]``, so OpenAPI documents every answer) and what a client
reads (``memstream.client``).

Each route builds its model and the envelope serialises it (``recall_api.errors.ok``)
with the fields the route set: an optional field a route leaves out stays out of the
answer. The models ignore fields they do not know, so a client talking to a newer server
with more fields still parses; the API's tests check that every real answer re-renders
unchanged through the model its route declares (``tests/integration/test_api_shapes.py``),
so OpenAPI, the answers and the client (``memstream.client``) cannot drift apart.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema

from memstream.schemas.enums import Level, MemType, OpSource, OpType, Ownership, Status
from memstream.schemas.json_types import JsonObject

if TYPE_CHECKING:
    from memstream.schemas.memory import ChangeRecord, MemoryRecord

# An instant as Python's ``isoformat`` writes it (``+00:00``, not ``Z``): the form the
# writer's and the lifecycle's answers always had.
IsoInstant = Annotated[
    datetime,
    PlainSerializer(datetime.isoformat, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}, mode="serialization"),
]
# A number the API answers as a numeric string (an export's record as kept in Redis).
NumericText = Annotated[float, PlainSerializer(repr, return_type=str, when_used="json")]
IntText = Annotated[int, PlainSerializer(str, return_type=str, when_used="json")]


class _Data(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Source(_Data):
    """Where a memory came from: ``msg_ids`` holds every source turn (several for a
    consolidated memory)."""

    session_id: str | None = None
    msg_id: str | None = None
    msg_ids: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, r: MemoryRecord) -> Source:
        return cls(session_id=r.source_session_id, msg_id=r.source_msg_id, msg_ids=r.msg_ids)


class EntityRef(_Data):
    """An entity a memory names (docs/architecture.md#entities): the user's resolved
    entity, its name as that memory wrote it, its type."""

    entity_id: str
    name: str
    type: str

    @classmethod
    def links_of(cls, r: MemoryRecord) -> list[EntityRef]:
        return [cls(entity_id=e["entity_id"], name=e["name"], type=e["type"]) for e in r.entities]


class AddAccepted(_Data):
    """``add``: the turns are queued for extraction; poll ``tasks/{task_id}``."""

    task_id: str
    accepted: bool


class TaskCounts(_Data):
    added: int = 0
    updated: int = 0
    superseded: int = 0
    skipped: int = 0
    evicted: int = 0


class TaskStatus(_Data):
    """``tasks/{task_id}``: ``accepted`` until the ingest has applied the add, then
    ``done`` (with counts and the memories it touched) or ``failed`` (code, reason)."""

    task_id: str
    status: str
    user_id: int | None = None
    tenant_id: str | None = None
    app_id: str | None = None
    kid: str | None = None  # the key that added it (only that key's app may read it)
    updated_at: float | None = None
    counts: TaskCounts | None = None
    memory_ids: list[str] = Field(default_factory=list)
    degraded: bool = False
    warnings: list[str] = Field(default_factory=list)
    code: int | None = None
    reason: str | None = None

    @property
    def settled(self) -> bool:
        return self.status in ("done", "failed")


class StructuredAdded(_Data):
    """``add_structured``: the memory is durable; ``duplicate`` when the same text was
    already stored (its id is answered)."""

    memory_id: str
    duplicate: bool = False
    evicted: int | None = None
    # declared entity types the rules extractor ignored (docs/architecture.md#entities)
    warnings: list[str] = Field(default_factory=list)


class RecalledMemory(_Data):
    memory_id: str
    content: str
    ownership: Ownership
    mem_type: MemType
    level: Level
    app_id: str | None = None
    session_id: str | None = None
    status: Status = Status.ACTIVE
    weight: float
    relevance: float
    score: float
    is_important: bool = False
    created_at: datetime | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    custom_tags: JsonObject = Field(default_factory=dict)
    source: Source = Field(default_factory=Source)
    entities: list[EntityRef] = Field(default_factory=list)


class RecallResult(_Data):
    """``recall``: the memories best first; ``hit`` is false when none passed the
    relevance threshold."""

    hit: bool
    memories: list[RecalledMemory] = Field(default_factory=list)
    # with ``max_chars``: the budget asked and the characters the memories use
    max_chars: int | None = None
    chars_used: int | None = None


class Memory(_Data):
    """A stored memory as ``user/list`` and ``history`` show it."""

    memory_id: str
    content: str
    user_id: int
    app_id: str | None = None
    session_id: str | None = None
    level: Level
    ownership: Ownership
    mem_type: MemType
    status: Status
    weight: float
    is_important: bool = False
    recall_count: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_recalled_at: datetime | None = None
    expire_at: datetime | None = None
    archived_at: datetime | None = None
    deleted_at: datetime | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    superseded_by: str | None = None
    custom_tags: JsonObject = Field(default_factory=dict)
    source: Source = Field(default_factory=Source)
    entities: list[EntityRef] = Field(default_factory=list)

    @classmethod
    def of(cls, r: MemoryRecord) -> Memory:
        """The caller-facing fields of a stored memory (no hash, no version)."""
        return cls(
            memory_id=r.memory_id, content=r.content, user_id=r.user_id, app_id=r.app_id,
            session_id=r.session_id, level=r.level, ownership=r.ownership,
            mem_type=r.mem_type, status=r.status, weight=round(r.weight, 6),
            is_important=r.is_important, recall_count=r.recall_count,
            created_at=r.created_at, updated_at=r.updated_at,
            last_recalled_at=r.last_recalled_at, expire_at=r.expire_at,
            archived_at=r.archived_at, deleted_at=r.deleted_at, valid_at=r.valid_at,
            invalid_at=r.invalid_at, superseded_by=r.superseded_by,
            custom_tags=r.custom_tags, source=Source.of(r),
            entities=EntityRef.links_of(r),
        )  # fmt: skip


class Change(_Data):
    """One row of the immutable change log."""

    change_id: str
    memory_id: str
    user_id: int
    app_id: str | None = None
    level: Level
    op_type: OpType
    content_before: str = ""
    content_after: str = ""
    reason: str = ""
    op_source: OpSource
    op_time: datetime
    task_id: str = ""
    sanitized: bool = False

    @classmethod
    def of(cls, c: ChangeRecord) -> Change:
        return cls(
            change_id=c.change_id, memory_id=c.memory_id, user_id=c.user_id, app_id=c.app_id,
            level=c.level, op_type=c.op_type, content_before=c.content_before,
            content_after=c.content_after, reason=c.reason, op_source=c.op_source,
            op_time=c.op_time, task_id=c.task_id, sanitized=c.sanitized,
        )  # fmt: skip


class Updated(_Data):
    memory_id: str
    updated: list[str] = Field(default_factory=list)
    reembedded: bool = False


class Deleted(_Data):
    """``delete`` / ``batch_delete``: gone from recall now, physically after retention."""

    deleted: int
    memory_ids: list[str] = Field(default_factory=list)
    not_found: list[str] = Field(default_factory=list)
    physical_removal_due: IsoInstant | None = None


class Purged(Deleted):
    crypto_shredded: bool = False
    exports_deleted: int | None = None
    raw_transcripts_expire_within_h: int | None = None


class History(_Data):
    """``history``: the memory, its supersede chain (oldest first) and every change."""

    memory: Memory
    chain: list[Memory] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)


class ChangeLogPage(_Data):
    items: list[Change] = Field(default_factory=list)
    total: int
    page: int
    page_size: int
    has_more: bool


class ScopedMemories(_Data):
    """``user/list`` groups by scope: GLOBAL, APP by app id, SESSION by session id."""

    GLOBAL: list[Memory] = Field(default_factory=list)
    APP: dict[str, list[Memory]] = Field(default_factory=dict)
    SESSION: dict[str, list[Memory]] = Field(default_factory=dict)

    def all(self) -> list[Memory]:
        """Every memory of the page, GLOBAL first, then each app's, then each session's."""
        out = list(self.GLOBAL)
        for group in (self.APP, self.SESSION):
            for items in group.values():
                out.extend(items)
        return out


class UserMemories(_Data):
    memories: ScopedMemories
    # the user's profiles this key may read (docs/architecture.md#the-profile): derived
    # from the memories, listed apart from them and not in ``total``
    profiles: list[Memory] = Field(default_factory=list)
    total: int
    page: int
    page_size: int
    has_more: bool


class Entity(_Data):
    """One entity of a user (docs/api.md#entities): its name and type as the newest
    memory names it, its other names, how many ACTIVE memories link it and the newest
    ``valid_at`` among them."""

    entity_id: str
    name: str
    type: str
    aliases: list[str] = Field(default_factory=list)
    memories: int
    last_seen: datetime


class Entities(_Data):
    """``entities``: one page of the user's entities, most memories first."""

    entities: list[Entity] = Field(default_factory=list)
    total: int
    page: int
    page_size: int
    has_more: bool


class EntityUpdated(_Data):
    """``entity/update``: the entity that holds the links now (the renamed one, ``into``,
    or a split's new one) and the memories that got a new version."""

    op: str
    entity_id: str
    name: str
    type: str
    memories_changed: int
    memory_ids: list[str] = Field(default_factory=list)


class PendingUser(_Data):
    tenant_id: str
    user_id: int
    pending: int


class EntitiesPending(_Data):
    """``/admin/v1/entities/pending``: users with live memories that link no entity."""

    users: list[PendingUser] = Field(default_factory=list)


class EntitiesBackfilled(_Data):
    """``/admin/v1/entities/backfill``: one page; ``next`` the cursor of the next (None:
    the user is done)."""

    memories_seen: int
    memories_linked: int
    next: str | None = None


class SummaryItem(_Data):
    """One line of a summary, with exactly the memories and turns it states."""

    text: str
    memory_ids: list[str] = Field(default_factory=list)
    msg_ids: list[str] = Field(default_factory=list)


class ProfileItem(_Data):
    """One statement of a profile, with exactly the memories and turns it states;
    ``entity`` the name of the entity it is about, when it is about one."""

    text: str
    entity: str | None = None
    memory_ids: list[str] = Field(default_factory=list)
    msg_ids: list[str] = Field(default_factory=list)


class Profile(_Data):
    """``profile``: the items in reading order, their characters together, and the newest
    ``updated_at`` among the memories they cite (None when there are none)."""

    items: list[ProfileItem] = Field(default_factory=list)
    chars_used: int = 0
    updated_at: datetime | None = None


class ContextItem(_Data):
    """One line of a context: a profile item, a recalled memory or an entity's summary,
    with exactly the memories and turns it states; ``entity`` the entity's name (an
    entity item, or a profile item about one), ``entity_id`` an entity item's id."""

    kind: Literal["profile", "memory", "entity"]
    text: str
    memory_ids: list[str] = Field(default_factory=list)
    msg_ids: list[str] = Field(default_factory=list)
    entity: str | None = None
    entity_id: str | None = None


class Context(_Data):
    """``context``: the items in reading order, the one block an agent pastes into its
    prompt (``text``, sections of one line per item) and its length (``chars_used``)."""

    items: list[ContextItem] = Field(default_factory=list)
    text: str = ""
    chars_used: int = 0


class EntityDetail(_Data):
    """``entity``: the entity, its summary (from its ACTIVE memories) and every memory
    that names it in time order, history included; ``entities``: every match when a
    name matched more than one (``entity`` is the first)."""

    entity: Entity
    entities: list[Entity] | None = None
    summary: list[SummaryItem] = Field(default_factory=list)
    memories: list[Memory] = Field(default_factory=list)


class Switched(_Data):
    user_id: int
    app_id: str | None = None
    enabled: bool


class ExportStarted(_Data):
    export_id: str
    status: str


class ExportStatus(_Data):
    """``export/{export_id}``: ``running``, ``failed`` (reason) or ``done`` with the
    counts and a signed download ``url`` (a path on the API) valid until ``expires``."""

    export_id: str
    status: str
    # the job's record as kept in Redis: the API answers its numbers (user_id, counts,
    # the epoch seconds it started and finished) as numeric strings, parsed here
    tenant_id: str | None = None
    user_id: IntText | None = None
    created_at: NumericText | None = None
    memories: IntText | None = None
    changes: IntText | None = None
    finished_at: NumericText | None = None
    reason: str | None = None
    url: str | None = None
    expires: int | None = None


class SessionClosed(_Data):
    promoted: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    refused: list[str] = Field(default_factory=list)
    pending_memory_id: str | None = None


class WhoAmI(_Data):
    """``/console/v1/whoami``: the key's tenant, role (``local`` without keys) and apps
    (``None``: every app of the tenant)."""

    tenant: str
    role: str
    apps: list[str] | None = None
    global_grant: bool
    kid: str | None = None


class LifecycleSummary(_Data):
    """``/admin/v1/lifecycle/run``: what one lifecycle pass did (counts of memories)."""

    now: IsoInstant
    users: int
    archived: int  # decayed below the threshold
    expired: int  # archived because expire_at passed
    purged: int
    purged_deleted: int
    purged_archived: int
    sanitized_changes: int
    consolidated: int
    consolidated_members: int
    failed_commands: int
    reconciled: dict[str, int] = Field(default_factory=dict)
    took_s: float


class ProcessStats(_Data):
    """``/admin/v1/stats``: the process's Python heap and memo tables, its hot cache
    (API processes), its ClickHouse engine and embedded Milvus Lite's segments."""

    python: JsonObject
    lru_caches: dict[str, dict[str, int | None]]
    hot_cache: dict[str, int] | None = None
    clickhouse: dict[str, int]
    milvus: dict[str, int]


class SqlResult(_Data):
    """``/admin/v1/sql``: the columns' names and the rows (at most ``max_rows``)."""

    columns: list[str]
    rows: list[list[Any]]


# --- key-value items (docs/api.md#key-value-items) ---------------------------------------


class ItemPut(_Data):
    """``items/put``: the item's memory id and what the put did (``none``: the same value
    again, or a delete of an absent key)."""

    memory_id: str
    op: Literal["put", "delete", "none"]


class Item(_Data):
    """One key-value item: its value exactly as put; ``score`` the relevance to a
    search's query (null without one, or for an item not embedded); ``app_id`` and
    ``session_id`` its scope (a ``subtree`` search reads several)."""

    namespace: list[str]
    key: str
    value: JsonObject
    created_at: datetime
    updated_at: datetime
    memory_id: str
    score: float | None = None
    app_id: str | None = None
    session_id: str | None = None


class ItemFound(_Data):
    """``items/get``."""

    item: Item


class ItemPage(_Data):
    """``items/search``: most relevant first with a query, else most recently updated."""

    items: list[Item]


class ItemNamespaces(_Data):
    """``items/namespaces``: distinct, sorted."""

    namespaces: list[list[str]]
