"""The cold path's record cache: filled once, mirrored from writes, never stale."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from core.write_batch import WriteBatch
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.memory import MemoryRecord
from recall_api.cold_records import ColdRecords

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def rec(mid: str, content: str, status: Status = Status.ACTIVE, user: int = 1) -> MemoryRecord:
    return MemoryRecord(
        mid,
        user,
        content,
        "h" + mid,
        Level.GLOBAL,
        Ownership.USER,
        MemType.SEMANTIC,
        0.8,
        NOW,
        NOW,
        NOW,
        NOW,
        status=status,
    )


class FakeStore:
    def __init__(self, records: list[MemoryRecord]) -> None:
        self.records = records
        self.loads = 0
        self.hook = None

    def load(self, user_id, statuses=None, memory_ids=None, *, tenant="default"):
        self.loads += 1
        if self.hook:
            self.hook()
        return [r for r in self.records if r.user_id == user_id and r.status in statuses]


def test_loads_once_and_mirrors_writes_including_the_lexical_index():
    store = FakeStore([rec("a", "I like hotpot"), rec("d", "gone", Status.DELETED)])
    cold = ColdRecords(store, budget_bytes=10**6)
    entry = cold.get(1, tenant="default")
    assert (
        set(entry.records) == {"a"} and cold.get(1, tenant="default") is entry and store.loads == 1
    )
    cold.apply(
        WriteBatch(
            memories=[
                dataclasses.replace(entry.records["a"], status=Status.ARCHIVED),
                rec("b", "I live in Berlin", Status.SUPERSEDED),
            ]
        )
    )
    assert entry.records["a"].status is Status.ARCHIVED
    assert set(entry.lexical.normalized("Berlin")) == {"b"}
    cold.apply(
        WriteBatch(memories=[dataclasses.replace(entry.records["b"], status=Status.DELETED)])
    )
    assert "b" not in entry.records and entry.lexical.normalized("Berlin") == {}
    cold.apply(WriteBatch(milvus_deletes=["a"]))
    assert entry.records == {}


def test_a_write_during_the_load_keeps_that_load_out_of_the_cache():
    store = FakeStore([rec("a", "old text")])
    cold = ColdRecords(store, budget_bytes=10**6)
    store.hook = lambda: cold.apply(WriteBatch(memories=[rec("a", "new text")]))
    first = cold.get(1, tenant="default")
    assert first.records["a"].content == "old text"  # this request's view, used once
    store.hook = None
    store.records = [rec("a", "new text")]
    assert cold.get(1, tenant="default").records["a"].content == "new text" and store.loads == 2


def test_lru_budget_evicts_the_least_recent_user():
    store = FakeStore([rec("a", "x" * 100, user=1), rec("b", "y" * 100, user=2)])
    cold = ColdRecords(store, budget_bytes=1200)
    cold.get(1, tenant="default")
    cold.get(2, tenant="default")
    assert cold.peek(1, tenant="default") is None and cold.peek(2, tenant="default") is not None


def test_a_user_bigger_than_the_budget_is_held_alone():
    store = FakeStore([rec("a", "x" * 10, user=1), rec("b", "y" * 1000, user=2)])
    cold = ColdRecords(store, budget_bytes=1200)
    cold.get(1, tenant="default")
    big = cold.get(2, tenant="default")  # ~4600 estimated bytes > 1200
    assert cold.peek(2, tenant="default") is big and cold.peek(1, tenant="default") is None


def test_a_mirrored_write_is_not_a_use():
    users = [rec(f"m{u}", "x" * 10, user=u) for u in (1, 2, 3)]
    store = FakeStore(users)
    cold = ColdRecords(store, budget_bytes=2000)  # ~640 bytes a user: three fit
    for u in (1, 2, 3):
        cold.get(u, tenant="default")
    cold.apply(WriteBatch(memories=[rec("n1", "new", user=1)]))  # user 1 stays least recent
    store.records.append(rec("m4", "x" * 10, user=4))
    cold.get(4, tenant="default")
    assert cold.peek(1, tenant="default") is None
    assert all(cold.peek(u, tenant="default") is not None for u in (2, 3, 4))
