"""What the memory store sends beside ClickHouse: the ``memory.changes`` events of a
write batch and the Milvus rows (with the blind tag tokens), built from the batch's
values alone (no I/O here; ``sinks.memory_store`` sends them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

import numpy as np

from core.scope import tag_key_text, tag_value_text
from core.timeutil import epoch_ms
from core.write_batch import WriteBatch
from memstream.schemas.enums import OpType
from memstream.schemas.json_types import JsonObject, JsonValue
from memstream.schemas.memory import MemoryRecord
from sinks.keyring import KeyRing

REFRESH_OP = "REFRESH"  # memory.changes op of a weight-only update (no change-log row)


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def change_events(
    batch: WriteBatch, origin: str, stored_hash: Callable[[MemoryRecord], str]
) -> list[JsonObject]:
    """The ``memory.changes`` events of ``batch``: one per change row (NONE rows are no
    change) and a weight-only REFRESH per memory written without one."""
    events: list[JsonObject] = [
        {
            "op": str(c.op_type),
            "memory_id": c.memory_id,
            "user_id": c.user_id,
            "tenant_id": c.tenant_id,
            "scope": {"level": str(c.level), "app_id": c.app_id},
            "at": c.op_time.isoformat(),
            "change_id": c.change_id,
            "task_id": c.task_id or None,
            "origin": origin,
        }
        for c in batch.changes
        if c.op_type is not OpType.NONE
    ]
    # A version written with no change row (weight recovery after recall hits) is
    # no change of content or status: the event carries the new weight fields so a
    # follower patches its copy in place instead of reloading the user.
    logged = {c.memory_id for c in batch.changes}
    events += [
        {
            "op": REFRESH_OP,
            "memory_id": m.memory_id,
            "user_id": m.user_id,
            "tenant_id": m.tenant_id,
            "scope": {"level": str(m.level), "app_id": m.app_id},
            "at": m.updated_at.isoformat(),
            "origin": origin,
            "weights": {
                "status": str(m.status),
                "content_hash": stored_hash(m),
                "weight": m.weight,
                "weight_at": m.weight_at.isoformat(),
                "last_recalled_at": _iso(m.last_recalled_at),
                "recall_count": m.recall_count,
            },
        }
        for m in batch.memories
        if m.memory_id not in logged
    ]
    return events


def blind_tags(
    keys: KeyRing, user_id: int, tags: Mapping[str, JsonValue], tenant: str
) -> dict[str, str]:
    """``{token(key): token(key, value)}`` under the user's current data key."""
    return {
        keys.blind(user_id, tag_key_text(k), tenant): keys.blind(
            user_id, tag_value_text(k, v), tenant
        )
        for k, v in tags.items()
    }


def milvus_row(
    m: MemoryRecord, vector: np.ndarray | None, tags: dict[str, str] | None = None
) -> dict[str, object]:
    """A Milvus row; ``tags`` are the blind tokens (``blind_tags``), never the tags."""
    row: dict[str, object] = {
        "memory_id": m.memory_id,
        "user_id": str(m.user_id),
        "tenant_id": m.tenant_id,
        "app_id": m.app_id or "",
        "session_id": m.session_id or "",
        "level": str(m.level),
        "ownership": str(m.ownership),
        "mem_type": str(m.mem_type),
        "status": str(m.status),
        "is_important": m.is_important,
        "tags": tags or {},
        "valid_at": epoch_ms(m.valid_at),
        "invalid_at": epoch_ms(m.invalid_at) if m.invalid_at else 0,
    }
    if vector is not None:
        row["vector"] = np.asarray(vector, dtype=np.float32).tolist()
    return row
