"""The writer's purge fences (dataflows.ingest.fence): turns sent at or before a
whole-user purge, or a scoped delete of their scope, are refused; later ones, undated
ones and those of other scopes kept."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime

from dataflows.ingest.fence import MAX_SCOPES, REASON, SCOPE_REASON, Fences, fenced, purged_at
from dataflows.ingest.items import Extracted, FactItem, Incoming, IncomingCommand, Source
from memstream.schemas.commands import Command
from memstream.schemas.events import ConversationEvent
from memstream.schemas.facts import Fact


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


def _turn(task_id: str, ts_s: float, **scope) -> Incoming:
    event = ConversationEvent(
        user_id=7, messages=[{"role": "user", "content": "hi there"}], **scope
    )
    return Incoming(event, task_id, Source("memory.conversations", 0, 1, b"7", b"{}", ts_s))


def test_a_scoped_delete_fences_the_turns_of_its_scope_only() -> None:
    fences = Fences()
    fences.note(_command("delete", {"scope": {"app_id": "app_a"}}, 200.0))
    assert fences.user is None and len(fences.scopes) == 1
    assert fences.refuses(_turn("a", 150.0, app_id="app_a")) == SCOPE_REASON
    assert fences.refuses(_turn("a_at", 200.0, app_id="app_a")) == SCOPE_REASON
    assert fences.refuses(_turn("a_after", 201.0, app_id="app_a")) is None
    assert fences.refuses(_turn("b", 150.0, app_id="app_b")) is None
    assert fences.refuses(_turn("global", 150.0)) is None
    assert fences.refuses(_turn("undated", 0.0, app_id="app_a")) is None
    # a session scope names the SESSION turns of that session, as the writer stores them
    fences.note(_command("delete", {"scope": {"session_id": "s1"}}, 300.0))
    assert fences.refuses(_turn("s1", 250.0, level="SESSION", session_id="s1")) == SCOPE_REASON
    assert fences.refuses(_turn("s2", 250.0, level="SESSION", session_id="s2")) is None
    assert fences.refuses(_turn("app_s1", 250.0, app_id="x", session_id="s1")) is None


def test_an_app_keys_batch_delete_fences_only_what_it_may_delete() -> None:
    fences = Fences()
    access = {"apps": ["app_a"], "global": False}
    fences.note(_command("delete", {"scope": {}, "access": access}, 200.0))
    assert fences.refuses(_turn("a", 100.0, app_id="app_a")) == SCOPE_REASON
    assert fences.refuses(_turn("b", 100.0, app_id="app_b")) is None
    assert fences.refuses(_turn("g", 100.0, app_id="app_a", level="GLOBAL")) is None


def test_deletes_by_id_and_other_commands_fence_nothing() -> None:
    fences = Fences()
    fences.note(_command("delete", {"memory_ids": ["m_1"]}, 500.0))
    fences.note(_command("update", {"memory_id": "m_1", "scope": {}}, 500.0))
    assert fences.stored() is None


def test_fenced_fails_the_scopes_turns_with_the_scope_reason() -> None:
    fences = Fences()
    fences.note(_command("delete", {"scope": {"app_id": "app_a"}}, 200.0))
    tasks = [_turn("mine", 100.0, app_id="app_a"), _turn("later", 300.0, app_id="app_a")]
    facts = [FactItem(Fact(text="f", msg_index=0), f"m_{t.task_id}", t.task_id, t) for t in tasks]
    kept, failed = fenced(Extracted(7, tasks, facts), fences)
    assert [t.task_id for t in kept.tasks] == ["later"] and len(kept.facts) == 1
    assert [(r.task_id, r.code, r.reason) for r in failed] == [("mine", 40401, SCOPE_REASON)]


def test_the_state_of_the_version_before_loads_and_stays_small() -> None:
    old = pickle.loads(pickle.dumps(200.0))  # what a snapshot of the version before holds
    fences = Fences.of(old)
    assert fences.user == 200.0 and fences.refuses(_turn("t", 150.0)) == REASON
    assert Fences.of(None).stored() is None
    # a whole-user purge covers the scope fences before it
    fences.note(_command("delete", {"scope": {"app_id": "a"}}, 300.0))
    fences.note(_command("delete", {"scope": {"app_id": "b"}}, 100.0))  # covered: not kept
    assert list(fences.scopes.values()) == [300.0]
    fences.note(_command("delete", {"shred": True, "scope": {}}, 400.0))
    assert fences.user == 400.0 and fences.scopes == {}
    # older than the conversations retention (plus a day): no turn that old still arrives
    keep_s = 3600.0
    fences.note(_command("delete", {"scope": {"app_id": "a"}}, 10_000.0), keep_s)
    fences.note(_command("delete", {"scope": {"app_id": "b"}}, 200_000.0), keep_s)
    assert list(fences.scopes.values()) == [200_000.0]
    # and at most MAX_SCOPES, the newest
    for i in range(MAX_SCOPES + 5):
        fences.note(_command("delete", {"scope": {"session_id": f"s{i}"}}, 300_000.0 + i))
    assert len(fences.scopes) == MAX_SCOPES
    assert min(fences.scopes.values()) == 300_005.0
    assert pickle.loads(pickle.dumps(fences)) == fences
