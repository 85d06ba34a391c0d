"""Tags stored before the depth limit existed (issue 12) must not break a user's reads.

Older nodes accepted ``custom_tags`` ~250 levels deep; every read of that user then
answered 500. Such rows are written here straight to the stores, as an old node did,
and every read endpoint must answer them, with the tree cut at the limit.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from core.hashing import content_hash
from core.write_batch import WriteBatch
from memstream.schemas.enums import Level, MemType, OpType, Ownership
from memstream.schemas.limits import MAX_TAGS_DEPTH, json_depth
from memstream.schemas.memory import ChangeRecord, MemoryRecord
from tests.helpers.nesting import nested

pytestmark = pytest.mark.integration


def _seed_deep(runtime, user_id: int, levels: int) -> str:
    at = datetime.now(UTC)
    content = "I keep my bike in the garage"
    mid = f"m_{uuid.uuid4().hex[:24]}"
    rec = MemoryRecord(
        memory_id=mid,
        user_id=user_id,
        content=content,
        content_hash=content_hash(content),
        level=Level.GLOBAL,
        ownership=Ownership.USER,
        mem_type=MemType.SEMANTIC,
        weight=0.8,
        weight_at=at,
        created_at=at,
        updated_at=at,
        valid_at=at,
        custom_tags={"topic": "bike", "deep": nested(levels)},
    )
    change = ChangeRecord(
        change_id=f"c_{uuid.uuid4().hex[:24]}",
        memory_id=mid,
        user_id=user_id,
        op_type=OpType.ADD,
        op_time=at,
        content_after=content,
    )
    vec = runtime.embedder.embed([content])[0]
    runtime.memories.write(WriteBatch(memories=[rec], vectors={mid: vec}, changes=[change]))
    return mid


@pytest.mark.parametrize("levels", [252, 300])
def test_reads_of_a_user_with_legacy_deep_tags_answer(api, runtime, user_id, levels) -> None:
    mid = _seed_deep(runtime, user_id, levels)
    body = {"user_id": user_id}

    listed = api.post("/memory/v1/user/list", json=body)
    assert listed.status_code == 200, listed.text
    memories = listed.json()["data"]["memories"]["GLOBAL"]
    got = next(m for m in memories if m["memory_id"] == mid)
    assert got["custom_tags"]["topic"] == "bike"
    assert json_depth(got["custom_tags"]) <= MAX_TAGS_DEPTH

    history = api.post("/memory/v1/history", json={**body, "memory_id": mid})
    assert history.status_code == 200, history.text
    assert [c["op_type"] for c in history.json()["data"]["changes"]] == ["ADD"]

    recalled = api.post("/memory/v1/recall", json={**body, "query": "where is my bike?"})
    assert recalled.status_code == 200, recalled.text
    hit = next(m for m in recalled.json()["data"]["memories"] if m["memory_id"] == mid)
    assert json_depth(hit["custom_tags"]) <= MAX_TAGS_DEPTH

    exported = api.post("/memory/v1/export", json=body)
    assert exported.status_code == 200, exported.text
