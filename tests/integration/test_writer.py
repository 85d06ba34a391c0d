"""The keyed writer against the real stores: supersede via an LLM decision, capacity."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from core.hashing import content_hash, memory_id_for
from core.write_batch import WriteBatch
from dataflows.ingest.items import Extracted, FactItem, Incoming, Source
from dataflows.ingest.writer import Writer
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.events import ConversationEvent
from memstream.schemas.facts import Fact
from memstream.schemas.memory import MemoryRecord
from models.llm.openai_compat import OpenAILLM
from tests.helpers.scripted_llm import scripted_server

pytestmark = pytest.mark.integration


def _extracted(rt, user_id: int, task: str, *texts: str, app_id: str | None = None) -> Extracted:
    event = ConversationEvent(
        task_id=task,
        user_id=user_id,
        app_id=app_id,
        messages=[
            {"role": "user", "content": t, "msg_id": f"{task}-{i}"} for i, t in enumerate(texts)
        ],
    )
    inc = Incoming(event, task, Source("memory.conversations", 0, 0, None, None))
    vectors = rt.embedder.embed(list(texts))
    facts = [
        FactItem(
            Fact(text=t, msg_index=i, msg_id=f"{task}-{i}"),
            memory_id_for(f"{task}:{i}", 0, user_id=user_id, tenant="default"),
            task,
            inc,
            vectors[i],
        )
        for i, t in enumerate(texts)
    ]
    return Extracted(user_id, [inc], facts)


def _apply(rt, item: Extracted):
    applied = Writer(rt).apply_extracted(item)
    rt.memories.write(applied.batch)
    return applied


def test_llm_supersede_keeps_history(runtime, user_id) -> None:
    with scripted_server() as script:
        rt = dataclasses.replace(
            runtime, llm=OpenAILLM(script.url, model="scripted", timeout_s=5, max_retries=1)
        )
        first = _apply(rt, _extracted(rt, user_id, f"s1-{user_id}", "I live in Shenzhen"))
        old_id = first.results[0].memory_ids[0]
        script.push_chat(
            {
                "decisions": [
                    {"event": "DELETE", "id": "0", "text": None},
                    {
                        "event": "ADD",
                        "id": None,
                        "text": "Lives in Guangzhou (moved from Shenzhen)",
                    },
                ]
            }
        )
        second = _apply(rt, _extracted(rt, user_id, f"s2-{user_id}", "I moved to Guangzhou"))
        sent = script.sent_text(0)
    assert "I live in Shenzhen" in sent and "I moved to Guangzhou" in sent
    assert old_id not in sent, "real ids never reach the model"
    assert second.results[0].superseded == 1 and second.results[0].added == 1
    by_id = {m.memory_id: m for m in runtime.memories.load(user_id, tenant="default")}
    old, new = by_id[old_id], by_id[second.results[0].memory_ids[0]]
    assert old.status is Status.SUPERSEDED and old.invalid_at is not None
    assert old.superseded_by == new.memory_id
    assert new.status is Status.ACTIVE and "Guangzhou" in new.content
    ops = runtime.stores.clickhouse.query(
        "SELECT memory_id, op_type FROM memstream.memory_changelog FINAL "
        "WHERE user_id = {u:UInt64} ORDER BY op_time",
        {"u": user_id},
    )
    assert (old_id, "SUPERSEDE") in ops and (new.memory_id, "ADD") in ops
    assert old_id not in runtime.cache.get(user_id, tenant="default")


def test_llm_down_degrades_to_append(runtime, user_id) -> None:
    with scripted_server() as script:
        rt = dataclasses.replace(
            runtime, llm=OpenAILLM(script.url, model="scripted", timeout_s=2, max_retries=0)
        )
        _apply(rt, _extracted(rt, user_id, f"g1-{user_id}", "I like green tea"))
        script.push({"error": "boom"}, status=500)
        script.push({"error": "boom"}, status=500)
        applied = _apply(rt, _extracted(rt, user_id, f"g2-{user_id}", "I like green tea a lot"))
    assert applied.results[0].degraded and applied.results[0].added == 1
    assert len(runtime.memories.load(user_id, statuses=[Status.ACTIVE], tenant="default")) == 2


def _seed(rt, user_id: int, specs: list[tuple[str, float, datetime | None, bool]]) -> list[str]:
    now = datetime.now(UTC)
    records = []
    for text, weight, recalled, important in specs:
        records.append(
            MemoryRecord(
                memory_id=f"m_{user_id}_{len(records)}",
                user_id=user_id,
                content=text,
                content_hash=content_hash(text),
                level=Level.GLOBAL,
                ownership=Ownership.USER,
                mem_type=MemType.SEMANTIC,
                weight=weight,
                weight_at=now,
                created_at=now,
                updated_at=now,
                valid_at=now,
                is_important=important,
                last_recalled_at=recalled,
            )
        )
    vectors = rt.embedder.embed([r.content for r in records])
    rt.memories.write(
        WriteBatch(
            memories=records,
            vectors={r.memory_id: v for r, v in zip(records, vectors, strict=True)},
        )
    )
    rt.cache.invalidate(user_id, tenant="default")
    return [r.memory_id for r in records]


def test_capacity_evicts_lowest_weight_then_oldest_recalled_never_important(
    runtime, user_id
) -> None:
    rt = dataclasses.replace(
        runtime,
        settings=runtime.settings.model_copy(update={"capacity_global": 5, "important_ratio": 0.4}),
    )
    now = datetime.now(UTC)
    ids = _seed(
        rt,
        user_id,
        [
            ("I play chess on Sundays", 0.05, None, True),  # lowest weight but important
            ("I collect stamps", 0.30, now - timedelta(days=3), False),
            ("I own a kayak", 0.30, now - timedelta(days=30), False),  # same weight, older recall
            ("I speak Portuguese", 0.08, now, False),  # lowest non-important → DELETED (≤ 0.10)
            ("I drive a blue car", 0.70, None, False),
        ],
    )
    applied = _apply(rt, _extracted(rt, user_id, f"c1-{user_id}", "I have a garden with roses"))
    assert applied.results[0].added == 1 and applied.results[0].evicted == 1
    by_id = {m.memory_id: m for m in runtime.memories.load(user_id, tenant="default")}
    assert by_id[ids[3]].status is Status.DELETED  # weight 0.08 ≤ 0.10
    assert by_id[ids[0]].status is Status.ACTIVE  # important: never evicted

    applied = _apply(rt, _extracted(rt, user_id, f"c2-{user_id}", "I bake sourdough bread"))
    assert applied.results[0].evicted == 1
    by_id = {m.memory_id: m for m in runtime.memories.load(user_id, tenant="default")}
    assert by_id[ids[2]].status is Status.ARCHIVED  # 0.30, recalled 30 days ago: goes first
    assert by_id[ids[1]].status is Status.ACTIVE
    ops = runtime.stores.clickhouse.query(
        "SELECT memory_id, op_type, reason FROM memstream.memory_changelog FINAL "
        "WHERE user_id = {u:UInt64} AND op_type IN ('ARCHIVE', 'DELETE')",
        {"u": user_id},
    )
    assert {(m, o) for m, o, _ in ops} == {(ids[3], "DELETE"), (ids[2], "ARCHIVE")}
    assert all("capacity" in r for _, _, r in ops)


def test_capacity_full_of_important_memories_refuses_with_42901(runtime, user_id) -> None:
    rt = dataclasses.replace(
        runtime,
        settings=runtime.settings.model_copy(update={"capacity_global": 3, "important_ratio": 1.0}),
    )
    _seed(rt, user_id, [(f"I keep important note number {i}", 0.9, None, True) for i in range(3)])
    applied = _apply(rt, _extracted(rt, user_id, f"f1-{user_id}", "I have a dog called Rex"))
    result = applied.results[0]
    assert result.failed and result.code == 42901 and result.added == 0
    assert len(runtime.memories.load(user_id, statuses=[Status.ACTIVE], tenant="default")) == 3
