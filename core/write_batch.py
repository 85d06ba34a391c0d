"""What one applied input changes: the batch the dataflows build and the sink writes.

A :class:`WriteBatch` is a value, no I/O: new memory versions with their vectors, the
change-log rows (:func:`change`), and the removals (Milvus rows, physical purges, whole
users' data keys). The keyed writer fills it (``dataflows.ingest.recorder``);
``sinks.memory_store.MemoryStore.write`` makes it durable, and the hot caches apply it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memstream.schemas.commands import Command
from memstream.schemas.enums import OpSource, OpType
from memstream.schemas.memory import ChangeRecord, EntityLink, MemoryRecord
from memstream.schemas.tenants import UserKey


@dataclass
class WriteBatch:
    memories: list[MemoryRecord] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    changes: list[ChangeRecord] = field(default_factory=list)
    milvus_deletes: list[str] = field(default_factory=list)
    purge_ids: list[str] = field(default_factory=list)  # physical purge (lifecycle)
    # users whose data key is destroyed before this batch is sealed (a whole-user purge,
    # in the writer's order: whatever that user wrote earlier becomes unreadable)
    shred_users: list[UserKey] = field(default_factory=list)
    # entity links an edit dropped from a memory (its new version is in ``memories``):
    # the sink marks them UNLINKED in memory_entities (docs/architecture.md#entities)
    unlinked: list[tuple[MemoryRecord, EntityLink]] = field(default_factory=list)
    # memories deleted by a user or admin: the change rows of the profiles that cite them
    # lose their words (docs/architecture.md#the-profile)
    sanitize_cited: list[tuple[UserKey, str]] = field(default_factory=list)
    # commands to send once this batch is durable (a profile's LLM summary)
    followups: list[Command] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(
            self.memories
            or self.changes
            or self.milvus_deletes
            or self.purge_ids
            or self.shred_users
        )

    def extend(self, other: WriteBatch) -> None:
        self.memories.extend(other.memories)
        self.vectors.update(other.vectors)
        self.changes.extend(other.changes)
        self.milvus_deletes.extend(other.milvus_deletes)
        self.purge_ids.extend(other.purge_ids)
        self.shred_users.extend(other.shred_users)
        self.unlinked.extend(other.unlinked)
        self.sanitize_cited.extend(other.sanitize_cited)
        self.followups.extend(other.followups)


def change(
    memory: MemoryRecord,
    op: OpType,
    change_id: str,
    at: datetime,
    *,
    before: str = "",
    after: str = "",
    reason: str = "",
    task_id: str = "",
    source: OpSource = OpSource.SYSTEM,
) -> ChangeRecord:
    return ChangeRecord(
        change_id=change_id,
        memory_id=memory.memory_id,
        user_id=memory.user_id,
        tenant_id=memory.tenant_id,
        op_type=op,
        op_time=at,
        op_source=source,
        app_id=memory.app_id,
        level=memory.level,
        content_before=before,
        content_after=after,
        reason=reason,
        task_id=task_id,
    )
