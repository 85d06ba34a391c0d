"""The writer's purge fence (dataflows.ingest.fence): turns sent at or before a
whole-user purge are refused, later ones and undated ones kept."""

from __future__ import annotations

from datetime import UTC, datetime

from dataflows.ingest.fence import REASON, fenced, purged_at
from dataflows.ingest.items import Extracted, FactItem, Incoming, IncomingCommand, Source
from models.types import Fact
from schemas.commands import Command
from schemas.events import ConversationEvent


def _incoming(task_id: str, ts_s: float) -> Incoming:
    event = ConversationEvent(user_id=7, messages=[{"role": "user", "content": "hi there"}])
    return Incoming(event, task_id, Source("memory.conversations", 0, 1, b"7", b"{}", ts_s))


def _batch() -> Extracted:
    tasks = [_incoming("before", 100.0), _incoming("at", 200.0), _incoming("after", 300.0),
             _incoming("undated", 0.0)]  # fmt: skip
    facts = [FactItem(Fact(text=f"fact {t.task_id}", msg_index=0), f"m_{t.task_id}", t.task_id, t)
             for t in tasks]  # fmt: skip
    return Extracted(7, tasks, facts)


def test_turns_sent_at_or_before_the_purge_are_refused() -> None:
    kept, failed = fenced(_batch(), 200.0)
    assert [t.task_id for t in kept.tasks] == ["after", "undated"]
    assert [f.task_id for f in kept.facts] == ["after", "undated"]
    assert sorted(r.task_id for r in failed) == ["at", "before"]
    assert all(r.failed and r.code == 40401 and r.reason == REASON for r in failed)


def test_no_purge_no_change() -> None:
    batch = _batch()
    assert fenced(batch, None) == (batch, [])


def _command(op: str, payload: dict, ts_s: float) -> IncomingCommand:
    cmd = Command(op=op, command_id="c1", user_id=7, payload=payload,
                  at=datetime(2026, 1, 1, tzinfo=UTC))  # fmt: skip
    return IncomingCommand(cmd, Source("memory.commands", 0, 5, b"7", b"{}", ts_s))


def test_only_a_whole_user_purge_sets_the_fence() -> None:
    assert purged_at(_command("delete", {"shred": True}, 500.0)) == 500.0
    assert purged_at(_command("delete", {"memory_ids": ["m_1"]}, 500.0)) is None
    assert purged_at(_command("update", {"memory_id": "m_1"}, 500.0)) is None
    no_ts = purged_at(_command("delete", {"shred": True}, 0.0))
    assert no_ts == datetime(2026, 1, 1, tzinfo=UTC).timestamp()
