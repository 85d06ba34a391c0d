"""The mutation recorder: one call writes the version, vector and change row, and moves
the user's index and capacity counters with it (the counters stay those of the index)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import numpy as np

from core.hashing import change_id_for, content_hash
from core.user_index import UserIndex
from core.write_batch import WriteBatch
from dataflows.ingest.recorder import Recorder
from dataflows.ingest.writer import counters_of
from memstream.schemas.enums import Level, MemType, OpSource, OpType, Ownership, Status
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.tenants import UserKey

DIM = 8
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def rec(mid: str, text: str, level: Level = Level.GLOBAL, app_id: str | None = None, **kw):
    return MemoryRecord(
        memory_id=mid,
        user_id=7,
        content=text,
        content_hash=content_hash(text),
        level=level,
        app_id=app_id,
        ownership=Ownership.USER,
        mem_type=MemType.SEMANTIC,
        weight=0.8,
        weight_at=NOW,
        created_at=NOW,
        updated_at=NOW,
        valid_at=NOW,
        **kw,
    )


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def recorder(cause: str = "t1") -> Recorder:
    idx = UserIndex(7, DIM)
    return Recorder(WriteBatch(), NOW, cause, idx, counters_of(idx))


def test_add_writes_version_vector_change_row_and_moves_index_and_counters():
    rc = recorder()
    a = rec("m_a", "I like tea", Level.APP, "garden")
    rc.add(a, vec(1), "extracted")
    assert rc.batch.memories == [a]
    assert list(rc.batch.vectors) == ["m_a"]
    [row] = rc.batch.changes
    assert row.change_id == change_id_for("m_a", "ADD", "t1")
    assert (row.op_type, row.content_after, row.reason, row.task_id) == (
        OpType.ADD,
        "I like tea",
        "extracted",
        "t1",
    )
    assert row.op_source is OpSource.SYSTEM
    assert "m_a" in rc.idx
    assert rc.counters == counters_of(rc.idx)


def test_update_keeps_counts_in_scope_and_a_label_names_the_change_id():
    old = rec("m_s", "I am in Lisbon", Level.SESSION, "travel", session_id="s1")
    idx = UserIndex(7, DIM)
    idx.upsert(old, vec(2))
    rc = Recorder(WriteBatch(), NOW, "cmd1", idx, counters_of(idx))
    moved = dataclasses.replace(old, level=Level.APP, session_id=None)
    rc.update(old, moved, None, "promoted", label="PROMOTE", seq=2)
    row = rc.batch.changes[-1]
    assert row.op_type is OpType.UPDATE
    assert row.change_id == change_id_for("m_s", "PROMOTE", "cmd1", 2)
    assert (row.content_before, row.content_after) == ("I am in Lisbon", "I am in Lisbon")
    assert rc.batch.memories == [moved] and not rc.batch.vectors  # the index keeps its row
    assert np.allclose(idx.vector("m_s"), vec(2), atol=0.02)
    assert rc.idx.records["m_s"].level is Level.APP
    assert rc.counters == counters_of(rc.idx)


def test_retire_removes_or_pages_out_and_a_merge_member_has_no_row_of_its_own():
    rc = recorder()
    a, b, c = rec("m_a", "one"), rec("m_b", "two"), rec("m_c", "three")
    for i, r in enumerate((a, b, c)):
        rc.add(r, vec(i), "x")
    rows = len(rc.batch.changes)
    gone = dataclasses.replace(a, status=Status.SUPERSEDED)
    rc.retire(a, gone, OpType.SUPERSEDE, "contradicted", before="one", after="uno", seq=1)
    archived = dataclasses.replace(b, status=Status.ARCHIVED)
    rc.retire(b, archived, OpType.ARCHIVE, "capacity eviction", page=True)
    rc.retire(c, dataclasses.replace(c, status=Status.SUPERSEDED), None)
    assert [r.change_id for r in rc.batch.changes[rows:]] == [
        change_id_for("m_a", "SUPERSEDE", "t1", 1),
        change_id_for("m_b", "ARCHIVE", "t1"),
    ]
    assert len(rc.idx) == 0 and rc.idx.holds("m_b") and not rc.idx.holds("m_a")
    assert rc.counters == counters_of(rc.idx)


def test_restore_brings_a_paged_out_memory_back_and_note_writes_a_row_only():
    rc = recorder()
    a = rec("m_a", "I like tea")
    rc.add(a, vec(1), "x")
    rc.retire(a, dataclasses.replace(a, status=Status.ARCHIVED), OpType.ARCHIVE, "old", page=True)
    rc.restore(a, vec(1), "said again")
    assert "m_a" in rc.idx and rc.counters == counters_of(rc.idx)
    assert rc.batch.changes[-1].change_id == change_id_for("m_a", "RESTORE", "t1")
    memories = len(rc.batch.memories)
    other = rc.of("t2")
    other.note(a, OpType.NONE, "exact duplicate of m_a", key="m_new", after="I like tea", seq=3)
    assert len(rc.batch.memories) == memories  # a row alone
    assert rc.batch.changes[-1].change_id == change_id_for("m_new", "NONE", "t2", 3)
    assert rc.batch.changes[-1].task_id == "t2"


def test_without_index_or_counters_only_the_batch_is_filled():
    rc = Recorder(WriteBatch(), NOW, "pass1")
    a = rec("m_a", "one")
    rc.retire(a, dataclasses.replace(a, status=Status.ARCHIVED), OpType.ARCHIVE, "decayed")
    assert [m.status for m in rc.batch.memories] == [Status.ARCHIVED]
    assert rc.batch.changes[0].change_id == change_id_for("m_a", "ARCHIVE", "pass1")


def test_delete_shred_purge_and_touch_go_through_the_recorder():
    rc = recorder("c1")
    a = rec("m_a", "I like tea", Level.APP, "garden")
    b = rec("m_b", "I like jazz")
    rc.add(a, vec(1), "extracted")
    rc.add(b, vec(2), "extracted")
    rc.batch = WriteBatch()
    rc.delete(a, "deleted", source=OpSource.USER)
    gone = rc.batch.memories[-1]
    assert (gone.status, gone.deleted_at, gone.content) == (Status.DELETED, NOW, "I like tea")
    assert rc.batch.changes[-1].content_before == "I like tea"
    assert "m_a" not in rc.idx.records and not rc.batch.milvus_deletes
    assert dict(rc.counters.counts).get("app:garden", 0) == 0
    rc.delete(b, "purge requested", shred=True)
    shredded = rc.batch.memories[-1]
    assert (shredded.content, shredded.custom_tags) == ("", {})
    assert rc.batch.changes[-1].content_before == ""
    assert rc.batch.milvus_deletes == ["m_b"]
    rc.shred_user(UserKey("default", 7), ["m_a", "m_b", "m_old"])
    assert rc.batch.shred_users == [UserKey("default", 7)]
    assert rc.batch.milvus_deletes == ["m_b", "m_a", "m_old"]
    rc.purge(gone, "retention over")
    assert rc.batch.purge_ids == ["m_a"] and rc.batch.milvus_deletes[-1] == "m_a"
    assert rc.batch.changes[-1].op_type == OpType.PURGE


def test_touch_writes_and_indexes_without_a_change_row_or_a_count():
    rc = recorder()
    a = rec("m_a", "I like tea")
    rc.add(a, vec(1), "extracted")
    before = dict(rc.counters.counts)
    rc.batch = WriteBatch()
    hit = dataclasses.replace(a, recall_count=3, weight=0.9)
    rc.touch(hit)
    assert rc.batch.memories == [hit] and not rc.batch.changes and not rc.batch.vectors
    assert rc.idx.records["m_a"].recall_count == 3
    assert dict(rc.counters.counts) == before


def test_move_admits_with_the_old_slot_free_and_records_an_update():
    rc = recorder()
    s = rec("m_s", "I like tea", Level.SESSION, session_id="s1")
    rc.add(s, vec(1), "extracted")
    moved = dataclasses.replace(s, level=Level.GLOBAL, session_id=None)
    seen: list[dict] = []
    assert rc.move(s, moved, "promoted", lambda r: seen.append(dict(rc.counters.counts)) or True)
    assert seen[0].get("total", 0) == 0  # its own slot was free while admitted
    assert rc.batch.memories[-1] == moved
    assert rc.batch.changes[-1].change_id == change_id_for("m_s", "PROMOTE", "t1")
    assert not rc.move(moved, s, "back", lambda r: False)
    assert rc.batch.memories[-1] == moved  # refused: nothing recorded
