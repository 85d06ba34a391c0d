"""Seed memories straight into the stores for lifecycle tests (no ingest needed)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

from core.hashing import content_hash
from core.write_batch import WriteBatch, change
from memstream.schemas.enums import Level, MemType, OpType, Ownership, Status
from memstream.schemas.memory import MemoryRecord

T0 = datetime.now(UTC).replace(microsecond=0)
_n = itertools.count()


def record(user_id: int, text: str, **fields: Any) -> MemoryRecord:
    """A USER SEMANTIC GLOBAL memory of weight 0.80 anchored at T0, unless told otherwise."""
    base: dict[str, Any] = {
        "memory_id": f"m_lc_{user_id}_{next(_n)}",
        "user_id": user_id,
        "content": text,
        "content_hash": content_hash(text),
        "level": Level.GLOBAL,
        "ownership": Ownership.USER,
        "mem_type": MemType.SEMANTIC,
        "weight": 0.80,
        "weight_at": T0,
        "created_at": T0,
        "updated_at": T0,
        "valid_at": T0,
    }
    return MemoryRecord(**{**base, **fields})


def seed(rt: Any, *records: MemoryRecord) -> list[MemoryRecord]:
    """Write records with vectors and their change-log rows (ADD, plus DELETE/ARCHIVE)."""
    vectors = rt.embedder.embed([r.content for r in records])
    changes = []
    for r in records:
        changes.append(change(r, OpType.ADD, f"c_add_{r.memory_id}", T0, after=r.content))
        if r.status is not Status.ACTIVE:
            op = OpType.DELETE if r.status is Status.DELETED else OpType.ARCHIVE
            changes.append(change(r, op, f"c_out_{r.memory_id}", T0, before=r.content))
    rt.memories.write(
        WriteBatch(
            memories=list(records),
            vectors={r.memory_id: v for r, v in zip(records, vectors, strict=True)},
            changes=changes,
        )
    )
    for user_id in {r.user_id for r in records}:
        rt.cache.invalidate(user_id, tenant="default")
    return list(records)
