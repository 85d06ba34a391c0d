"""Clock-driven lifecycle passes through the running keyed writer (real stores).

Every pass is scoped to the test's user, so other tests' memories are never touched.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from dataflows.lifecycle.commands import recall_hits_command
from dataflows.lifecycle.scan import run_pass
from dataflows.lifecycle.submit import KafkaVia
from memstream.schemas.enums import Ownership, Status
from memstream.schemas.tenants import UserKey
from tests.helpers.lifecycle import T0, record, seed

pytestmark = pytest.mark.integration


def day(n: float):
    return T0 + timedelta(days=n)


def _pass(runtime, user_id: int, n: float) -> dict:
    summary = run_pass(runtime, day(n), KafkaVia(runtime.stores, 30), users=[user_id])
    assert summary["failed_commands"] == 0, summary
    return summary


def _status(runtime, user_id: int, memory_id: str) -> Status | None:
    found = runtime.memories.get(user_id, memory_id, tenant="default")
    return found.status if found else None


def _changes(runtime, memory_id: str) -> list[tuple]:
    return runtime.stores.clickhouse.query(
        "SELECT op_type, reason, content_before, content_after, sanitized "
        "FROM memstream.memory_changelog FINAL WHERE memory_id = {m:String} ORDER BY op_time",
        {"m": memory_id},
    )


def test_a_normal_memory_is_archived_after_90_days_important_and_persona_are_not(
    runtime, ingest, user_id
) -> None:
    normal, important, persona = seed(
        runtime,
        record(user_id, "I like green tea"),
        record(user_id, "I am allergic to peanuts", is_important=True, weight=0.9),
        record(
            user_id,
            "I answer in a calm voice",
            ownership=Ownership.AGENT,
            weight=0.7,
            custom_tags={"persona": True},
        ),
    )
    assert _pass(runtime, user_id, 89)["archived"] == 0
    assert _status(runtime, user_id, normal.memory_id) is Status.ACTIVE

    idx = runtime.cache.get(
        user_id, tenant="default"
    )  # a cached user: the writer's index is kept current
    assert normal.memory_id in idx
    summary = _pass(runtime, user_id, 91)
    assert summary["archived"] == 1 and summary["users"] == 1
    assert normal.memory_id not in idx and important.memory_id in idx
    stored = runtime.memories.get(user_id, normal.memory_id, tenant="default")
    assert stored.status is Status.ARCHIVED and stored.archived_at == day(91)
    assert stored.weight == pytest.approx(0.8 * 8 ** (-91 / 90), rel=1e-3)
    assert ("ARCHIVE", "decayed below 0.10") in [c[:2] for c in _changes(runtime, normal.memory_id)]
    assert runtime.stores.milvus.get([normal.memory_id], ["status"])[0]["status"] == "ARCHIVED"

    assert _pass(runtime, user_id, 800)["archived"] == 0
    assert _status(runtime, user_id, important.memory_id) is Status.ACTIVE
    assert _status(runtime, user_id, persona.memory_id) is Status.ACTIVE


def test_a_recall_restarts_the_clock(runtime, ingest, user_id) -> None:
    (m,) = seed(runtime, record(user_id, "I run every morning"))
    via = KafkaVia(runtime.stores, 30)
    (result,) = via([recall_hits_command(UserKey("default", user_id), {m.memory_id: 2}, day(60))])
    assert result["code"] == 0 and result["data"]["recovered"] == [m.memory_id]
    hit = runtime.memories.get(user_id, m.memory_id, tenant="default")
    assert hit.weight == pytest.approx(0.8 * 8 ** (-60 / 90) + 0.1, rel=1e-3)  # 0.2 + Δ
    assert hit.weight_at == day(60) and hit.last_recalled_at == day(60) and hit.recall_count == 2

    (again,) = via([recall_hits_command(UserKey("default", user_id), {m.memory_id: 1}, day(60))])
    assert again["data"]["skipped"] == [m.memory_id]  # a replayed hit changes nothing

    assert _pass(runtime, user_id, 91)["archived"] == 0
    assert _status(runtime, user_id, m.memory_id) is Status.ACTIVE
    assert _pass(runtime, user_id, 109)["archived"] == 1  # 0.3 → 0.1 in ~47.5 days


def test_an_expired_memory_is_archived_even_with_the_switch_off(runtime, ingest, user_id) -> None:
    (m,) = seed(
        runtime, record(user_id, "Dentist appointment on Friday", weight=0.85, expire_at=day(1))
    )
    runtime.switches.set(
        user_id, None, False, tenant="default"
    )  # the lifecycle runs with memory switched off
    assert _pass(runtime, user_id, 0.5)["expired"] == 0
    summary = _pass(runtime, user_id, 2)
    assert summary["expired"] == 1 and summary["archived"] == 0
    assert _status(runtime, user_id, m.memory_id) is Status.ARCHIVED
    assert ("ARCHIVE", "expired") in [c[:2] for c in _changes(runtime, m.memory_id)]


def test_a_soft_deleted_memory_is_purged_after_30_days_and_its_history_sanitized(
    runtime, ingest, user_id
) -> None:
    (m,) = seed(
        runtime, record(user_id, "My bank PIN is 4321", status=Status.DELETED, deleted_at=T0)
    )
    assert _pass(runtime, user_id, 29)["purged"] == 0
    assert _status(runtime, user_id, m.memory_id) is Status.DELETED
    assert runtime.stores.milvus.get([m.memory_id], ["memory_id"])  # kept until the purge

    summary = _pass(runtime, user_id, 31)
    assert summary["purged"] == 1 and summary["sanitized_changes"] == 2
    assert runtime.memories.load(user_id, memory_ids=[m.memory_id], tenant="default") == []
    raw = runtime.stores.clickhouse.query(
        "SELECT count() FROM memstream.memories WHERE memory_id = {m:String}", {"m": m.memory_id}
    )
    assert raw[0][0] == 0  # no version left, FINAL or not
    assert runtime.stores.milvus.get([m.memory_id], ["memory_id"]) == []
    changes = _changes(runtime, m.memory_id)
    assert {c[0] for c in changes} == {"ADD", "DELETE", "PURGE"}
    assert all(c[2] == "" and c[3] == "" and c[4] == 1 for c in changes), changes


def test_an_archived_memory_is_purged_after_180_days(runtime, ingest, user_id) -> None:
    (m,) = seed(
        runtime,
        record(user_id, "I used to live in Lisbon", status=Status.ARCHIVED, archived_at=T0),
    )
    assert _pass(runtime, user_id, 179)["purged"] == 0
    summary = _pass(runtime, user_id, 181)
    assert summary["purged"] == 1
    assert runtime.memories.load(user_id, memory_ids=[m.memory_id], tenant="default") == []
    assert runtime.stores.milvus.get([m.memory_id], ["memory_id"]) == []
