"""One way to record a change of a user's memories inside the keyed writer.

A :class:`Recorder` is the context of one applied input (a fact's task, a management
command, a lifecycle pass): the batch it fills, its time, its cause (the task, command
or pass id that names its change rows), and the user's hot index and capacity counters
when it holds them. One call records one mutation whole, in this order: the memory's
new version, its vector (when it has one), its change row (``change_id_for`` of the
memory, the op and the cause), the index, and the counters. Every mutation a handler
makes goes through one: add, restore, update, move, retire, delete, purge, shred and
touch; no handler edits a batch or the counters itself.

The counters count ACTIVE memories (``counters_of`` of the index): a version that
enters ACTIVE counts +1 in its scope, one that leaves it −1; a record that was not
ACTIVE counts nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from core.capacity import Counters, delta_for
from core.hashing import change_id_for
from core.user_index import UserIndex
from core.write_batch import WriteBatch, change
from memstream.schemas.enums import APART_TYPES, KEYED_TYPES, OpSource, OpType, Status
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.tenants import UserKey
from sinks.tasks import TaskResult


@dataclass
class Recorder:
    batch: WriteBatch
    now: datetime
    cause: str  # task id / command id / pass id: the change rows' task_id and id part
    idx: UserIndex | None = None
    counters: Counters | None = None
    result: TaskResult | None = None  # the task's result, where one is reported

    def of(self, cause: str, result: TaskResult | None = None) -> Recorder:
        """The same batch, index and counters, for another cause (the next fact's task)."""
        return dataclasses.replace(self, cause=cause, result=result)

    # ------------------------------------------------------------ mutations
    def add(
        self,
        rec: MemoryRecord,
        vector: np.ndarray,
        reason: str,
        *,
        op: OpType = OpType.ADD,
        before: str = "",
        source: OpSource = OpSource.SYSTEM,
    ) -> None:
        """A new memory: written with its vector, indexed, counted."""
        self._put(rec, vector)
        self.note(rec, op, reason, before=before, after=rec.content, source=source)
        if self.idx is not None:
            self.idx.upsert(rec, vector)
        self._count(rec, +1)

    def restore(self, rec: MemoryRecord, vector: np.ndarray, reason: str) -> None:
        """An ARCHIVED memory ACTIVE again: out of ``paged`` if it was paged out, indexed
        with ``vector``, no longer dormant, counted."""
        self._put(rec, vector)
        self.note(rec, OpType.RESTORE, reason, after=rec.content)
        if self.idx is not None:
            self.idx.remove(rec.memory_id)
            self.idx.upsert(rec, vector)
            self.idx.note_status(rec)
        self._count(rec, +1)

    def update(
        self,
        old: MemoryRecord,
        rec: MemoryRecord,
        vector: np.ndarray | None,
        reason: str,
        *,
        label: str | None = None,
        seq: int = 0,
        source: OpSource = OpSource.SYSTEM,
    ) -> None:
        """A new version of the same memory (``vector``: when re-embedded); the index
        takes it when ACTIVE (keeping its vector when ``vector`` is None); counted anew
        in its scope. ``label``: the change id's op name when not ``UPDATE``."""
        self._put(rec, vector)
        self._unlink(old, rec)
        self.note(
            rec,
            OpType.UPDATE,
            reason,
            before=old.content,
            after=rec.content,
            label=label,
            seq=seq,
            source=source,
        )
        if self.idx is not None and rec.status is Status.ACTIVE:
            self.idx.upsert(rec, vector)
        elif (
            self.idx is not None and self.idx.paged is not None and rec.memory_id in self.idx.paged
        ):
            self.idx.paged.upsert(rec, vector)  # a paged-out one: its held copy follows
        self._count(old, -1, rec)

    def retire(
        self,
        old: MemoryRecord,
        rec: MemoryRecord,
        op: OpType | None,
        reason: str = "",
        *,
        before: str = "",
        after: str = "",
        seq: int = 0,
        source: OpSource = OpSource.SYSTEM,
        page: bool = False,
    ) -> None:
        """``old`` leaves ACTIVE as ``rec`` (SUPERSEDED, DELETED, ARCHIVED): out of the
        index (into ``paged`` when ``page``: default recall still finds it), uncounted.
        ``op`` None: no change row of its own (a merge member: the MERGE row names it)."""
        self.batch.memories.append(rec)
        if op is not None:
            self.note(rec, op, reason, before=before, after=after, seq=seq, source=source)
        if self.idx is not None:
            if page:
                self.idx.page_out(rec)
            else:
                self.idx.remove(old.memory_id)
            if rec.mem_type in KEYED_TYPES:  # a deleted item: no longer held
                self.idx.note_item(rec)
        self._count(old, -1)

    def move(
        self,
        old: MemoryRecord,
        rec: MemoryRecord,
        reason: str,
        admit: Callable[[MemoryRecord], bool],
        *,
        label: str = "PROMOTE",
    ) -> bool:
        """``rec``, ``old``'s new version in another scope, admitted by ``admit`` with
        ``old``'s own slot free (it leaves its scope as ``rec`` enters), then recorded as
        an update; False (nothing recorded) when ``admit`` refuses it."""
        with self._vacated(old):
            if not admit(rec):
                return False
        self.update(old, rec, None, reason, label=label)
        return True

    def delete(
        self,
        old: MemoryRecord,
        reason: str,
        *,
        source: OpSource = OpSource.SYSTEM,
        shred: bool = False,
    ) -> None:
        """``old`` soft-deleted now (DELETED, kept until the lifecycle purge: restore,
        time travel). ``shred``: a whole-user purge — the deleted version keeps none of
        the words (the data key that sealed the old ones is destroyed when this batch is
        written, see :meth:`shred_user`), and its vector leaves Milvus now: an embedding
        is a readable likeness of the words (inversion models recover much of a short
        text), and a purged memory has nothing to restore."""
        now = self.now
        rec = dataclasses.replace(old, status=Status.DELETED, deleted_at=now, updated_at=now)
        if shred:
            rec = dataclasses.replace(
                rec,
                content="",
                custom_tags={},
                source_msg_id=None,
                source_msg_ids=[],
                entities=[],
            )
            self._unlink(old, rec)
            self.batch.milvus_deletes.append(old.memory_id)
        before = "" if shred else old.content
        self.retire(old, rec, OpType.DELETE, reason, before=before, source=source)

    def shred_user(self, user: UserKey, stored_ids: Iterable[str]) -> None:
        """A whole-user purge's end: the user's data key is destroyed when this batch is
        written (crypto-shredding, docs/security.md), and the vectors of every stored
        version (``stored_ids``: deleted or superseded before, too) leave Milvus."""
        self.batch.shred_users.append(user)
        named = set(self.batch.milvus_deletes)
        self.batch.milvus_deletes.extend(mid for mid in stored_ids if mid not in named)

    def purge(self, rec: MemoryRecord, reason: str) -> None:
        """``rec`` leaves the stores for good (the lifecycle, after the retention): its
        rows and its vector, with a PURGE change row."""
        self.batch.milvus_deletes.append(rec.memory_id)
        self.batch.purge_ids.append(rec.memory_id)
        self.note(rec, OpType.PURGE, reason)

    def touch(self, rec: MemoryRecord) -> None:
        """A new version that changes no status, scope or words (recall-hit recovery:
        weight and recall stats): written and indexed (its vector kept), with no change
        row and no count."""
        self._put(rec, None)
        if self.idx is not None:
            self.idx.upsert(rec, None)

    def derive(self, old: MemoryRecord | None, rec: MemoryRecord, reason: str) -> None:
        """A derived memory's new version (a profile, ``dataflows.ingest.derive``): written
        with its change row (ADD, UPDATE, or DELETE when it retires, which says no words:
        a purge's is sealed after the user's key is gone); never indexed, given a vector
        or counted (docs/architecture.md#the-profile). The change id names the version's
        words: one cause may write several versions (its inputs grouped otherwise after
        a restart), and a replay of the same version is the same row."""
        self.batch.memories.append(rec)
        was = old is not None and old.status is Status.ACTIVE
        if rec.status is not Status.ACTIVE:
            op = OpType.DELETE
        else:
            op = OpType.UPDATE if was else OpType.ADD
        before = old.content if old is not None and was and op is not OpType.DELETE else ""
        label = f"DERIVE_{op}_{rec.content_hash}"
        self.note(rec, op, reason, before=before, after=rec.content, label=label)

    def put_item(
        self, old: MemoryRecord | None, rec: MemoryRecord, vector: np.ndarray | None, reason: str
    ) -> None:
        """A key-value item's new version (docs/architecture.md#key-value-items): written
        with its vector and its change row (ADD, UPDATE, or DELETE when it leaves
        ACTIVE), followed in the index's ``items``; never searched or counted there."""
        self._put(rec, vector)
        was = old is not None and old.status is Status.ACTIVE
        if rec.status is not Status.ACTIVE:
            op, before, after = OpType.DELETE, old.content if old is not None else "", ""
        else:
            op = OpType.UPDATE if was else OpType.ADD
            before, after = (old.content if old is not None and was else ""), rec.content
        self.note(rec, op, reason, before=before, after=after, source=OpSource.USER)
        if self.idx is not None:
            self.idx.note_item(rec)

    def note(
        self,
        anchor: MemoryRecord,
        op: OpType,
        reason: str,
        *,
        key: str | None = None,
        before: str = "",
        after: str = "",
        label: str | None = None,
        seq: int = 0,
        source: OpSource = OpSource.SYSTEM,
    ) -> None:
        """A change row alone (a NONE decision, a purge): ``anchor`` names the memory;
        ``key`` the id its change id is made of, when not the anchor's."""
        cid = change_id_for(key or anchor.memory_id, label or str(op), self.cause, seq)
        self.batch.changes.append(
            change(
                anchor,
                op,
                cid,
                self.now,
                before=before,
                after=after,
                reason=reason,
                task_id=self.cause,
                source=source,
            )
        )

    # ------------------------------------------------------------ parts
    def _put(self, rec: MemoryRecord, vector: np.ndarray | None) -> None:
        self.batch.memories.append(rec)
        if vector is not None:
            self.batch.vectors[rec.memory_id] = vector

    def _unlink(self, old: MemoryRecord, rec: MemoryRecord) -> None:
        """The links ``old`` had and ``rec`` lost, for the sink to mark UNLINKED."""
        kept = {link["entity_id"] for link in rec.entities}
        self.batch.unlinked += [(rec, x) for x in old.entities if x["entity_id"] not in kept]

    @contextmanager
    def _vacated(self, old: MemoryRecord) -> Iterator[None]:
        """The counters without ``old`` for the block, as they were after it."""
        self._count(old, -1)
        try:
            yield
        finally:
            self._count(old, +1)

    def _count(self, rec: MemoryRecord, sign: int, then: MemoryRecord | None = None) -> None:
        """``rec`` counted ``sign`` in its scope when ACTIVE, and ``then`` +1 when ACTIVE,
        as one delta (a version in the same scope moves no count)."""
        if self.counters is None:
            return
        delta: dict[str, int] = {}
        for r, n in ((rec, sign), (then, +1)):
            if r is not None and r.status is Status.ACTIVE and r.mem_type not in APART_TYPES:
                for key, d in delta_for(r.level, r.app_id, r.is_important, n).items():
                    delta[key] = delta.get(key, 0) + d
        self.counters.apply(delta)
