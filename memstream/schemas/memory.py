"""The memory record and the change-log record, as they live in ClickHouse
(docs/architecture.md#stores).

Plain slotted dataclasses rather than pydantic models: the hot paths hold thousands of
them per user and copy them on every mutation (``dataclasses.replace``). ``content`` is
plaintext here; sinks encrypt it at rest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import NotRequired, TypedDict

from memstream.schemas.enums import Level, MemType, OpSource, OpType, Ownership, Status
from memstream.schemas.json_types import JsonObject
from memstream.schemas.tenants import DEFAULT_TENANT


class EntityLink(TypedDict):
    """One entity a memory names (docs/architecture.md#entities): ``entity_id`` is the
    user's resolved entity (stable under replay), ``name`` its name as this memory was
    written, ``type`` its type; ``said`` the form this memory said it in ("Mel", "my
    sister") when that differs from ``name``, else ""; ``relation`` the speaker's relation
    said with it ("sister" for "my sister Anna"), which later mentions of "my sister"
    resolve by. A plain dict so the record codec and the stores carry it as JSON."""

    entity_id: str
    name: str
    type: str
    said: str
    relation: NotRequired[str]


@dataclass(slots=True)
class MemoryRecord:
    memory_id: str
    user_id: int
    content: str
    content_hash: str
    level: Level
    ownership: Ownership
    mem_type: MemType
    weight: float
    weight_at: datetime
    created_at: datetime
    updated_at: datetime
    valid_at: datetime
    app_id: str | None = None
    session_id: str | None = None
    status: Status = Status.ACTIVE
    is_important: bool = False
    recall_count: int = 0
    last_recalled_at: datetime | None = None
    expire_at: datetime | None = None
    archived_at: datetime | None = None
    deleted_at: datetime | None = None
    invalid_at: datetime | None = None
    superseded_by: str | None = None
    source_session_id: str | None = None
    source_msg_id: str | None = None
    # Every source turn: more than one for a consolidated memory; empty means just
    # ``source_msg_id`` (see ``msg_ids``).
    source_msg_ids: list[str] = field(default_factory=list)
    custom_tags: JsonObject = field(default_factory=dict)
    version: int = 0
    tenant_id: str = DEFAULT_TENANT  # with user_id, the person (memstream.schemas.tenants)
    # The entities this memory names, resolved per user (docs/architecture.md#entities).
    entities: list[EntityLink] = field(default_factory=list)

    @property
    def vector_ref(self) -> str:
        return self.memory_id

    @property
    def msg_ids(self) -> list[str]:
        """Every source msg_id of this memory, in order, without repeats."""
        ids = list(self.source_msg_ids)
        if self.source_msg_id and self.source_msg_id not in ids:
            ids.insert(0, self.source_msg_id)
        return ids


@dataclass(slots=True, frozen=True)
class ChangeRecord:
    change_id: str
    memory_id: str
    user_id: int
    op_type: OpType
    op_time: datetime
    op_source: OpSource = OpSource.SYSTEM
    app_id: str | None = None
    level: Level = Level.GLOBAL
    content_before: str = ""
    content_after: str = ""
    reason: str = ""
    task_id: str = ""
    sanitized: bool = False
    tenant_id: str = DEFAULT_TENANT


def tags_json(tags: JsonObject) -> str:
    return json.dumps(tags, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
