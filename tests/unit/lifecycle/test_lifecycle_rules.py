"""The lifecycle rules with plain numbers: 90-day archive, α, persona, expiry, retention."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.settings import Settings
from dataflows.lifecycle.rules import Action, plan_memory, plan_user, recovered
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.memory import MemoryRecord

S = Settings()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def mem(**fields) -> MemoryRecord:
    base = dict(
        memory_id="m1",
        user_id=1,
        content="x",
        content_hash="h",
        level=Level.GLOBAL,
        ownership=Ownership.USER,
        mem_type=MemType.SEMANTIC,
        weight=0.80,
        weight_at=T0,
        created_at=T0,
        updated_at=T0,
        valid_at=T0,
    )
    return MemoryRecord(**{**base, **fields})


def at(days: float) -> datetime:
    return T0 + timedelta(days=days)


def test_a_normal_memory_archives_between_day_89_and_91() -> None:
    assert plan_memory(mem(), at(89), S) is None
    planned = plan_memory(mem(), at(91), S)
    assert planned is not None and planned.action is Action.DECAYED
    assert planned.weight == pytest.approx(0.8 * 8 ** (-91 / 90))


def test_important_decays_ten_times_slower_and_persona_never() -> None:
    important = mem(is_important=True, weight=0.9)
    assert plan_memory(important, at(800), S) is None
    assert plan_memory(important, at(1000), S).action is Action.DECAYED
    persona = mem(ownership=Ownership.AGENT, custom_tags={"persona": True}, weight=0.7)
    assert plan_memory(persona, at(10_000), S) is None
    user_tagged = mem(custom_tags={"persona": True})  # USER memories are never persona
    assert plan_memory(user_tagged, at(91), S).action is Action.DECAYED


def test_expiry_archives_an_active_memory_whatever_its_weight() -> None:
    m = mem(weight=0.85, expire_at=at(1))
    assert plan_memory(m, at(0.5), S) is None
    assert plan_memory(m, at(1), S).action is Action.EXPIRED
    assert plan_memory(mem(status=Status.ARCHIVED, expire_at=at(1)), at(2), S) is None


def test_retention_purges_deleted_after_30_and_archived_after_180_days() -> None:
    deleted = mem(status=Status.DELETED, deleted_at=T0)
    assert plan_memory(deleted, at(29.9), S) is None
    assert plan_memory(deleted, at(31), S).action is Action.PURGE_DELETED
    archived = mem(status=Status.ARCHIVED, archived_at=T0)
    assert plan_memory(archived, at(179), S) is None
    assert plan_memory(archived, at(181), S).action is Action.PURGE_ARCHIVED
    assert plan_memory(mem(status=Status.SUPERSEDED), at(10_000), S) is None


def test_plan_user_lists_only_what_is_due() -> None:
    due = plan_user([mem(memory_id="a"), mem(memory_id="b", weight_at=at(60))], at(91), S)
    assert [p.memory_id for p in due] == ["a"]


def test_a_recall_restarts_the_clock_and_recovers_by_delta() -> None:
    hit = recovered(mem(recall_count=2), at(60), 3, S)
    assert hit.weight == pytest.approx(0.8 * 8 ** (-60 / 90) + 0.10)  # 0.2 + Δ
    assert hit.weight_at == at(60) and hit.last_recalled_at == at(60)
    assert hit.recall_count == 5
    assert plan_memory(hit, at(91), S) is None
    assert plan_memory(hit, at(109), S).action is Action.DECAYED  # 0.3 → 0.1 in ~47.5 days


def test_recovery_is_capped_by_the_memorys_own_initial_weight() -> None:
    assert recovered(mem(), T0, 1, S).weight == pytest.approx(0.80)
    assert recovered(mem(is_important=True, weight=0.9), T0, 1, S).weight == pytest.approx(0.90)
    assert recovered(mem(weight=0.95), T0, 1, S).weight == pytest.approx(0.95)  # never lowered
    agent = mem(ownership=Ownership.AGENT, mem_type=MemType.EPISODIC, weight=0.45)
    assert recovered(agent, T0, 1, S).weight == pytest.approx(0.50)


def test_a_late_hit_never_moves_the_anchor_back() -> None:
    m = mem(weight_at=at(10), last_recalled_at=at(10))
    hit = recovered(m, at(5), 1, S)
    assert hit.weight_at == at(10) and hit.last_recalled_at == at(10)


def test_naive_clocks_are_refused() -> None:
    with pytest.raises(ValueError):
        plan_memory(mem(), datetime(2026, 5, 1), S)
