"""Re-embed every stored memory with the configured model: the body of `memstream reembed`.

ClickHouse is the record. Every memory it holds has a vector — ACTIVE, ARCHIVED, and
also DELETED and SUPERSEDED ones, kept for restore and time travel (a purge removes a
memory from both stores; a whole-user purge's versions, emptied, have no vector) — so every row of ``memories FINAL`` is re-embedded. Pages go
in ``(user_id, memory_id)`` key order: one page is read and decrypted, embedded in one
call and upserted into Milvus in one round trip as full rows (``milvus_row``: the
scalars are ClickHouse's too). After each page its last key is the checkpoint
(``store_meta`` ``reembed:<collection>``), so a stopped run resumes after it; only when
the last page is written is the new model recorded and the checkpoint cleared. Until
then the start-up check refuses every process (``sinks.store_model``).

A model of another dimension cannot write into the old collection: a fresh run whose
model's dim differs from the collection's drops the collection and creates it anew with
the new dim (vectors are derived data; ClickHouse keeps the content). A resumed run finds
the collection already at the target dim.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from core.kv_items import record_text
from core.seams import EmbedderLike
from memstream.schemas.enums import Status
from memstream.schemas.memory import MemoryRecord
from sinks.change_events import milvus_row
from sinks.memory_store import MemoryStore
from sinks.store_model import Checkpoint, ModelIdentity, StoreModel

BATCH = 256

OnBatch = Callable[[int, Checkpoint], None]  # (memories in this page, checkpoint saved)


@dataclass(frozen=True)
class ReembedPlan:
    target: ModelIdentity
    recorded: ModelIdentity | None
    statuses: dict[str, int]  # memories per status
    done: int  # by an earlier, stopped run (resumed after ``checkpoint.after``)
    checkpoint: Checkpoint | None  # the one this run resumes
    discarded: Checkpoint | None  # a stopped run for another model, started over
    collection_dim: int | None

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    @property
    def remaining(self) -> int:
        return self.total - self.done

    @property
    def recreate_collection(self) -> bool:
        return self.collection_dim is not None and self.collection_dim != self.target.dim

    @property
    def up_to_date(self) -> bool:
        """The store already holds the target's vectors and no run is pending."""
        return (
            self.recorded == self.target
            and self.checkpoint is None
            and self.discarded is None
            and not self.recreate_collection
        )


def plan_reembed(
    memories: MemoryStore, embedder: EmbedderLike, restart: bool = False
) -> ReembedPlan:
    """What a run would do, from counts only (nothing is written)."""
    target = ModelIdentity.of(embedder)
    store = StoreModel(memories)
    ch = memories.stores.clickhouse
    rows = ch.query(
        f"SELECT status, count() FROM {ch.database}.memories FINAL "
        "WHERE mem_type != 'PROFILE' GROUP BY status"
    )
    statuses = {str(s): int(n) for s, n in sorted(rows)}
    dim = collection_dim(memories)
    cp = store.checkpoint()
    resumable = cp is not None and cp.target == target and dim == target.dim and not restart
    done = _count_upto(memories, cp.after) if resumable and cp and cp.after else 0
    return ReembedPlan(
        target=target,
        recorded=store.recorded(),
        statuses=statuses,
        done=done,
        checkpoint=cp if resumable else None,
        discarded=None if resumable else cp,
        collection_dim=dim,
    )


def run_reembed(
    memories: MemoryStore,
    embedder: EmbedderLike,
    plan: ReembedPlan,
    batch_size: int = BATCH,
    on_batch: OnBatch | None = None,
) -> int:
    """Carry out ``plan``; returns how many memories this run embedded."""
    store = StoreModel(memories)
    if plan.checkpoint is not None:
        cp = dataclasses.replace(plan.checkpoint, done=plan.done)
    else:
        cp = Checkpoint(plan.target, None, 0, datetime.now(UTC).isoformat())
    store.save_checkpoint(cp)  # from here on every process refuses to start
    if plan.recreate_collection:
        _recreate_collection(memories, plan.target.dim)
    mv = memories.stores.milvus
    embedded = 0
    while page := _page(memories, cp.after, batch_size):
        kept = [m for m in page if not _purged(m)]
        if kept:
            vectors = embedder.embed([record_text(m) for m in kept])
            mv.upsert(
                [milvus_row(m, vectors[i], memories.blind_tags(m)) for i, m in enumerate(kept)]
            )
        cp = Checkpoint(
            cp.target, (page[-1].user_id, page[-1].memory_id), cp.done + len(page), cp.started_at
        )
        store.save_checkpoint(cp)
        embedded += len(page)
        if on_batch is not None:
            on_batch(len(page), cp)
    mv.client.flush(mv.collection)
    store.record(plan.target, f"memstream reembed from {plan.recorded or 'an unrecorded model'}")
    store.clear_checkpoint()
    return embedded


def _purged(m: MemoryRecord) -> bool:
    """A whole-user purge's version: no words left, and its vector left Milvus with them
    (``dataflows.ingest.management``); embedding it again would bring a row back."""
    return m.status is Status.DELETED and not m.content


def collection_dim(memories: MemoryStore) -> int | None:
    """The vector size the Milvus collection was created with (None: no collection)."""
    mv = memories.stores.milvus
    if not mv.client.has_collection(mv.collection):
        return None
    for f in mv.client.describe_collection(mv.collection)["fields"]:
        if f["name"] == "vector":
            return int(f["params"]["dim"])
    return None


def _recreate_collection(memories: MemoryStore, dim: int) -> None:
    mv = memories.stores.milvus
    if mv.client.has_collection(mv.collection):
        mv.client.drop_collection(mv.collection)
    mv.dim = dim
    mv.setup()  # creates the collection with ``dim`` and loads it


def _page(memories: MemoryStore, after: tuple[int, str] | None, limit: int) -> list[MemoryRecord]:
    """The next ``limit`` memories after ``after`` in key order, decrypted."""
    ch = memories.stores.clickhouse
    # a profile (derived, docs/architecture.md#the-profile) has no vector to make
    keyset = "WHERE mem_type != 'PROFILE' " + (
        "" if after is None else "AND (user_id, memory_id) > ({lu:UInt64}, {lm:String}) "
    )
    keys = ch.query(
        f"SELECT user_id, memory_id FROM {ch.database}.memories FINAL {keyset}"
        "ORDER BY user_id, memory_id LIMIT {limit:UInt32}",
        {"lu": after[0] if after else 0, "lm": after[1] if after else "", "limit": limit},
    )
    if not keys:
        return []
    records = memories.load_ids([mid for _, mid in keys])
    return sorted(records, key=lambda m: (m.user_id, m.memory_id))


def _count_upto(memories: MemoryStore, after: tuple[int, str]) -> int:
    ch = memories.stores.clickhouse
    rows = ch.query(
        f"SELECT count() FROM {ch.database}.memories FINAL "
        "WHERE mem_type != 'PROFILE' AND (user_id, memory_id) <= ({lu:UInt64}, {lm:String})",
        {"lu": after[0], "lm": after[1]},
    )
    return int(rows[0][0])
