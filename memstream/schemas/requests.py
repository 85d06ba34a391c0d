"""The bodies of the HTTP API's requests (docs/api.md#request-fields), one model per
endpoint.

Unknown fields are refused (``extra="forbid"``: 40001). ``user_id`` is strict (``true``
is not user 1). ``request_id`` makes a write idempotent: resending it gives the same
answer and no second copy; the same id with another request answers 40901
(``recall_api.idempotency``). The answers' shapes are in ``memstream.schemas.responses``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    model_validator,
)

from memstream.schemas.commands import StructuredMemory
from memstream.schemas.enums import Level, MemType, OpType, Ownership, Role
from memstream.schemas.events import Conversation
from memstream.schemas.limits import (
    Content,
    CustomTags,
    IdText,
    MemoryId,
    QueryTime,
    ScopeId,
    StoreTime,
    StrictNumber,
    UserId,
    check_text,
    not_blank,
    strict_store_time,
)
from memstream.schemas.payloads import MAX_SPLIT_IDS, EntityOp, entity_update_problem
from memstream.schemas.tenants import TenantId
from memstream.schemas.users import ByUser

MAX_TOP_K = 100
MAX_BACKFILL_BATCH = 10_000
MAX_CHARS = 1_000_000


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# A caller's idempotency key (recall_api.idempotency): an id, so no control characters.
RequestId = Annotated[IdText, StringConstraints(min_length=1, max_length=128)]


# --- write -----------------------------------------------------------------------------


class AddRequest(Conversation):
    """The turns and where they belong: the fields of the ``memory.conversations``
    event the add becomes (the API gives it its task and tenant), and ``request_id``."""

    model_config = ConfigDict(frozen=False)

    request_id: RequestId | None = None


class StructuredRequest(StructuredMemory):
    request_id: RequestId | None = None


class SessionCloseRequest(_Body):
    user_id: UserId
    app_id: ScopeId | None = None
    session_id: ScopeId
    promote_ids: list[MemoryId] = Field(default_factory=list, max_length=1000)
    pending: StrictBool = False
    request_id: RequestId | None = None


# --- recall ----------------------------------------------------------------------------


def _aware(v: datetime) -> datetime:
    if v.tzinfo is None or v.utcoffset() is None:
        raise ValueError("as_of needs a timezone, e.g. 2025-01-31T12:00:00Z")
    return v


# as_of: with a timezone, then UTC inside the stores' range (memstream.schemas.limits.StoreTime)
AsOf = Annotated[datetime, AfterValidator(_aware), AfterValidator(strict_store_time)]


class CrossApp(_Body):
    enabled: StrictBool = False


class RecallScope(_Body):
    include_global: StrictBool = True
    app_id: ScopeId | None = None
    session_id: ScopeId | None = None
    cross_app: CrossApp = Field(default_factory=CrossApp)


class RecallFilter(_Body):
    ownership: list[Ownership] = Field(default_factory=list)
    mem_type: list[MemType] = Field(default_factory=list)
    custom_tags: list[
        Annotated[str, StringConstraints(min_length=1, max_length=256), AfterValidator(check_text)]
    ] = Field(default_factory=list, max_length=32)


class RecallRequest(_Body):
    user_id: UserId
    query: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=4096),
        AfterValidator(check_text),
    ]
    scope: RecallScope = Field(default_factory=RecallScope)
    filter: RecallFilter = Field(default_factory=RecallFilter)
    top_k: StrictInt | None = Field(default=None, ge=1, le=MAX_TOP_K)
    min_relevance: StrictNumber | None = Field(default=None, ge=0, le=1)
    include_archived: StrictBool = False
    timeout_ms: StrictInt | None = Field(default=None, ge=1, le=60_000)
    as_of: AsOf | None = None
    # an explicit filter: only memories linked to one of these entities (a name, an
    # alias or an entity_id; docs/architecture.md#entities)
    entities: list[
        Annotated[str, StringConstraints(min_length=1, max_length=128), AfterValidator(check_text)]
    ] = Field(default_factory=list, max_length=20)
    # the agent's context budget: the best-ranked memories that fit whole, in rank order
    max_chars: StrictInt | None = Field(default=None, ge=1, le=MAX_CHARS)
    # false: an inspection (the console's playground), not a use: no recall-hit event,
    # so no weight recovery and no last_recalled_at change; the ranking is the same
    record_hit: StrictBool = True


# --- manage ----------------------------------------------------------------------------


class UpdateRequest(_Body):
    user_id: UserId
    memory_id: MemoryId
    content: Content | None = Field(default=None, min_length=1, max_length=8192)
    is_important: StrictBool | None = None
    expire_at: StoreTime | None = None
    clear_expire_at: StrictBool = False
    custom_tags: CustomTags | None = None
    request_id: RequestId | None = None

    @model_validator(mode="after")
    def _something(self) -> UpdateRequest:
        if (
            self.content is None
            and self.is_important is None
            and self.expire_at is None
            and not self.clear_expire_at
            and self.custom_tags is None
        ):
            raise ValueError(
                "nothing to update: give content, is_important, expire_at or custom_tags"
            )
        return self


class DeleteRequest(_Body):
    user_id: UserId
    memory_id: MemoryId
    request_id: RequestId | None = None


class Scope(_Body):
    app_id: ScopeId | None = None
    level: Level | None = None
    session_id: ScopeId | None = None


class BatchDeleteRequest(_Body):
    user_id: UserId
    memory_ids: list[MemoryId] | None = Field(default=None, min_length=1, max_length=1000)
    scope: Scope | None = None
    request_id: RequestId | None = None

    @model_validator(mode="after")
    def _one_selector(self) -> BatchDeleteRequest:
        if (self.memory_ids is None) == (self.scope is None):
            raise ValueError("give exactly one of memory_ids or scope")
        return self


class HistoryRequest(_Body):
    user_id: UserId
    memory_id: MemoryId


class ChangeLogRequest(_Body):
    user_id: UserId
    app_id: ScopeId | None = None
    level: Level | None = None
    op_types: list[OpType] | None = None
    start: QueryTime | None = None  # clamped to what the store holds (1900..2299)
    end: QueryTime | None = None
    page: StrictInt = Field(default=1, ge=1, le=1_000_000)
    page_size: StrictInt = Field(default=50, ge=1, le=500)


# --- entities (docs/api.md#entities) ------------------------------------------------------


class ViewScope(_Body):
    """Which memories a view reads, as recall reads them: the GLOBAL ones with
    ``include_global``, and ``app_id``'s (an app key names one of its apps)."""

    include_global: StrictBool = True
    app_id: ScopeId | None = None


# a name as a caller writes it: text with something visible, compared folded
EntityName = Annotated[
    str,
    StringConstraints(strict=True, strip_whitespace=True, min_length=1, max_length=256),
    AfterValidator(not_blank),
]
EntityId = Annotated[IdText, StringConstraints(min_length=1, max_length=128)]


class EntitiesRequest(_Body):
    user_id: UserId
    scope: ViewScope | None = None  # none: every memory the key may read
    type: Annotated[EntityName, StringConstraints(max_length=64)] | None = None
    page: StrictInt = Field(default=1, ge=1, le=1_000_000)
    page_size: StrictInt = Field(default=100, ge=1, le=1000)


class EntityRequest(_Body):
    user_id: UserId
    scope: ViewScope | None = None
    entity_id: EntityId | None = None
    name: EntityName | None = None
    # the summary's budget (characters); its items fit whole
    max_chars: StrictInt = Field(default=1000, ge=1, le=MAX_CHARS)

    @model_validator(mode="after")
    def _one_selector(self) -> EntityRequest:
        if (self.entity_id is None) == (self.name is None):
            raise ValueError("give exactly one of entity_id or name")
        return self


PROFILE_MAX_CHARS = 20_000


class ProfileRequest(_Body):
    """``profile`` (docs/api.md#profile): the user's profile in ``scope``; ``entity`` (a
    name or an entity_id) narrows it to the memories that name that entity."""

    user_id: UserId
    scope: ViewScope = Field(default_factory=ViewScope)
    entity: EntityName | None = None
    max_chars: StrictInt = Field(default=2000, ge=1, le=PROFILE_MAX_CHARS)


# --- context (docs/api.md#context) ---------------------------------------------------------

CONTEXT_MAX_TURNS = 50
# a turn's text as the context call reads it: any text (blank is read as nothing)
TurnText = Annotated[
    str, StringConstraints(strict=True, max_length=32_768), AfterValidator(check_text)
]


class ContextTurn(_Body):
    """One of the agent's last turns, as a chat API writes it."""

    role: Role
    content: TurnText


class ContextRequest(_Body):
    """``context`` (docs/api.md#context): the profile of ``scope``, the memories relevant
    to ``query`` (else to the last user turns of ``messages``) and the entities they
    name, rendered to fit ``max_chars``; ``count_hit`` false: the memories it shows are
    not counted as recall hits."""

    user_id: UserId
    scope: ViewScope = Field(default_factory=ViewScope)
    messages: list[ContextTurn] | None = Field(default=None, max_length=CONTEXT_MAX_TURNS)
    query: (
        Annotated[
            str,
            StringConstraints(strict=True, strip_whitespace=True, min_length=1, max_length=4096),
            AfterValidator(not_blank),
        ]
        | None
    ) = None
    max_chars: StrictInt = Field(default=2000, ge=1, le=PROFILE_MAX_CHARS)
    count_hit: StrictBool = True


class EntityUpdateRequest(_Body):
    """``entity/update`` (docs/api.md#entityupdate): rename (``name``, ``type``), merge
    (``into``) or split (``memory_ids``, ``name``?, ``type``?) one entity."""

    user_id: UserId
    op: EntityOp
    entity_id: EntityId
    name: EntityName | None = None
    type: Annotated[EntityName, StringConstraints(max_length=64)] | None = None
    into: EntityId | None = None
    memory_ids: list[MemoryId] | None = Field(default=None, max_length=MAX_SPLIT_IDS)
    request_id: RequestId | None = None

    @model_validator(mode="after")
    def _fields_of_op(self) -> EntityUpdateRequest:
        problem = entity_update_problem(
            self.op, self.entity_id, self.name, self.type, self.into, self.memory_ids
        )
        if problem:
            raise ValueError(problem)
        return self


# --- privacy ---------------------------------------------------------------------------


class UserListRequest(_Body):
    user_id: UserId
    include_deleted: StrictBool = False
    page: StrictInt = Field(default=1, ge=1)
    page_size: StrictInt = Field(default=100, ge=1, le=1000)


class PurgeRequest(ByUser):
    """``user_id`` or ``external_id`` (memstream.schemas.users), exactly one."""

    scope: Scope | None = None
    request_id: RequestId | None = None


class SwitchRequest(_Body):
    user_id: UserId
    app_id: ScopeId | None = None
    enabled: StrictBool


class ExportRequest(ByUser):
    """``user_id`` or ``external_id`` (memstream.schemas.users), exactly one."""


# --- admin (loopback) ------------------------------------------------------------------


class LifecycleRunRequest(_Body):
    now: StoreTime | None = None  # naive = UTC; default: the node's wall clock
    users: list[UserId] | None = Field(default=None, max_length=10_000)


class EntitiesPendingRequest(_Body):
    """``/admin/v1/entities/pending``: users with memories stored before entities;
    ``tenant`` only in local mode (a key's admin reads its own tenant)."""

    tenant: TenantId | None = None
    user_id: UserId | None = None
    rescan: StrictBool = False  # every unlinked memory, read before or not


class EntitiesBackfillRequest(_Body):
    """``/admin/v1/entities/backfill``: link one page of a user's memories stored before
    entities; ``after``: the cursor the previous page answered (none: where the last run
    stopped, or from the first with ``rescan``)."""

    tenant: TenantId | None = None
    user_id: UserId
    batch: StrictInt = Field(default=200, ge=1, le=MAX_BACKFILL_BATCH)
    after: Annotated[IdText, StringConstraints(max_length=200)] | None = None
    rescan: StrictBool = False


class SqlRequest(_Body):
    query: Annotated[str, AfterValidator(check_text)] = Field(min_length=1, max_length=100_000)
    max_rows: StrictInt = Field(default=1000, ge=1, le=100_000)
