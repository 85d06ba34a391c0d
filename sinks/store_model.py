"""Which embedding model made a store's vectors, and the start-up check that keeps it so.

Vectors of two models cannot be compared, so a store remembers its model
(docs/operations.md#changing-the-embedding-model): the embedder's ``name`` and ``dim``,
recorded per Milvus collection in the ClickHouse table ``store_meta`` (key
``embedding_model:<collection>``, a JSON value). ClickHouse is
the record of the memories, so it also records what their vectors mean.

``check_store_model`` is the one start-up check. Every process reaches it where its
stores meet its embedder — ``sinks.services.open_services`` (node, API, ingest,
lifecycle; tests: ``Runtime.build``/``Services.build``):

- the store holds no memories → the configured model is recorded (an empty store takes
  any model);
- a re-embed checkpoint is present (``memstream reembed`` was stopped) → refused: the
  vectors are part one model, part another, whatever is configured;
- the recorded model is the configured one → go on;
- another model is recorded → refused, naming both, ``memstream reembed`` and the
  settings to change back;
- memories but no record, in a store made before models were recorded (its
  ``schema_migrations`` start below version 3): a few stored memories are embedded with
  the configured model and compared with their Milvus vectors. All equal (cosine ≥
  0.99) → the configured model is adopted and recorded; otherwise refused (such a store
  holds ``transformers:all-MiniLM-L6-v2`` vectors, the default of that time, unless
  another model was configured). A verified identity is recorded, never a guess;
- memories but no record in a store made since: no process has started on it yet (its
  rows came from a tool that writes the stores directly, e.g. a test), so there are no
  vectors of a known other model → the configured model is recorded.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from core.seams import EmbedderLike
from core.settings import Settings
from sinks.clickhouse import ClickHouseStore
from sinks.errors import ModelMismatch
from sinks.memory_store import MemoryStore

log = logging.getLogger(__name__)

LEGACY_MODEL = "transformers:all-MiniLM-L6-v2"  # the default before models were recorded
RECORDED_SINCE = 3  # the schema version that added store_meta
SAMPLE = 8  # stored memories re-embedded to identify an unrecorded store's model
SAME_VECTOR_COSINE = 0.99


@dataclass(frozen=True)
class ModelIdentity:
    name: str
    dim: int

    def __str__(self) -> str:
        return f"{self.name} ({self.dim}-d)"

    @classmethod
    def of(cls, embedder: EmbedderLike) -> ModelIdentity:
        """The identity of an embedder: its ``name`` and ``dim`` (``core.seams``)."""
        return cls(str(embedder.name), int(embedder.dim))

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> ModelIdentity:
        return cls(str(value["name"]), int(value["dim"]))


@dataclass(frozen=True)
class Checkpoint:
    """How far a re-embed got: every memory up to ``after`` (key order) has the target's
    vector."""

    target: ModelIdentity
    after: tuple[int, str] | None
    done: int
    started_at: str


class StoreMeta:
    """Key → JSON value rows of ``store_meta`` (ReplacingMergeTree: the newest wins)."""

    def __init__(self, ch: ClickHouseStore):
        self.ch = ch

    def get(self, key: str) -> dict[str, Any] | None:
        rows = self.ch.query(
            f"SELECT value FROM {self.ch.database}.store_meta FINAL WHERE key = {{k:String}}",
            {"k": key},
        )
        return json.loads(rows[0][0]) if rows and rows[0][0] else None

    def put(self, key: str, value: dict[str, Any] | None) -> None:
        """One insert; None deletes the key (an empty value)."""
        text = json.dumps(value, ensure_ascii=False) if value is not None else ""
        self.ch.insert(
            "store_meta",
            [[key, text, datetime.now(UTC), time.time_ns()]],
            ["key", "value", "updated_at", "version"],
        )


class StoreModel:
    """The model record and re-embed checkpoint of one store (database + collection)."""

    def __init__(self, memories: MemoryStore):
        self.memories = memories
        self.meta = StoreMeta(memories.stores.clickhouse)
        self.collection = memories.stores.milvus.collection

    @property
    def _model_key(self) -> str:
        return f"embedding_model:{self.collection}"

    @property
    def _checkpoint_key(self) -> str:
        return f"reembed:{self.collection}"

    def recorded(self) -> ModelIdentity | None:
        value = self.meta.get(self._model_key)
        return ModelIdentity.from_json(value) if value else None

    def record(self, model: ModelIdentity, how: str) -> None:
        now = datetime.now(UTC).isoformat()
        value = {"name": model.name, "dim": model.dim, "how": how, "recorded_at": now}
        self.meta.put(self._model_key, value)

    def checkpoint(self) -> Checkpoint | None:
        v = self.meta.get(self._checkpoint_key)
        if not v:
            return None
        after = (int(v["after"][0]), str(v["after"][1])) if v.get("after") else None
        return Checkpoint(ModelIdentity.from_json(v["target"]), after, v["done"], v["started_at"])

    def save_checkpoint(self, cp: Checkpoint) -> None:
        target = {"name": cp.target.name, "dim": cp.target.dim}
        value = {"target": target, "after": cp.after, "done": cp.done, "started_at": cp.started_at}
        self.meta.put(self._checkpoint_key, value)

    def clear_checkpoint(self) -> None:
        self.meta.put(self._checkpoint_key, None)

    def predates_records(self) -> bool:
        """Was the store created by a memstream that did not record models?"""
        ch = self.memories.stores.clickhouse
        rows = ch.query(f"SELECT min(version) FROM {ch.database}.schema_migrations")
        return bool(rows) and 0 < int(rows[0][0] or 0) < RECORDED_SINCE

    def holds_memories(self) -> bool:
        ch = self.memories.stores.clickhouse
        return bool(ch.query(f"SELECT 1 FROM {ch.database}.memories LIMIT 1"))

    def vectors_match(self, embedder: EmbedderLike) -> bool | None:
        """Do stored vectors equal ``embedder``'s vectors of the same (decrypted) content?
        None when none of the sampled memories has a vector in the collection."""
        ch = self.memories.stores.clickhouse
        keys = ch.query(
            f"SELECT user_id, memory_id FROM {ch.database}.memories FINAL "
            f"ORDER BY user_id, memory_id LIMIT {SAMPLE * 4}"
        )
        stored = self.memories.vectors([mid for _, mid in keys])
        if not stored:
            return None
        ids = list(stored)[:SAMPLE]
        records = self.memories.load_ids(ids)
        if any(stored[r.memory_id].shape[0] != embedder.dim for r in records):
            return False
        fresh = embedder.embed([r.content for r in records])
        old = np.stack([stored[r.memory_id] for r in records])
        old = old / np.linalg.norm(old, axis=1, keepdims=True)
        return bool(np.all(np.sum(old * fresh, axis=1) >= SAME_VECTOR_COSINE))


def check_store_model(
    memories: MemoryStore, embedder: EmbedderLike, settings: Settings | None = None
) -> ModelIdentity:
    """Record the model of an empty store, or raise ModelMismatch if the store's vectors
    were made by another one. Returns the identity. (A process that builds its model
    later opens with ``check_model=False`` and checks it once built: ``ops.lifecycle_cmd``.)"""
    want = ModelIdentity.of(embedder)
    store = StoreModel(memories)
    if not store.holds_memories():
        if store.recorded() != want:
            store.record(want, "empty store")
            log.info("store model recorded", extra={"fields": {"model": str(want)}})
        if store.checkpoint() is not None:
            store.clear_checkpoint()
        return want
    if (cp := store.checkpoint()) is not None:
        raise ModelMismatch(_interrupted(cp))
    have = store.recorded()
    if have == want:
        return want
    if have is None and not store.predates_records():
        store.record(want, "first start")
        log.info("store model recorded", extra={"fields": {"model": str(want)}})
        return want
    if have is None:
        match = store.vectors_match(embedder)
        if match:
            store.record(want, "adopted: stored vectors match")
            log.info("store model adopted", extra={"fields": {"model": str(want)}})
            return want
        raise ModelMismatch(_unrecorded(want, store.collection, match, settings))
    raise ModelMismatch(_mismatch(have, want, settings))


REEMBED_HOW = (
    "  - re-embed the store with the configured model: stop memstream (`memstream down`) "
    "and run `memstream reembed` (resumable; `--dry-run` shows the counts first), or"
)


def _mismatch(have: ModelIdentity, want: ModelIdentity, s: Settings | None) -> str:
    return "\n".join(
        [
            f"the store's vectors were made by the embedding model {have}, but the "
            f"configured model is {want}; vectors of two models cannot be compared, so "
            "memstream does not start on this store. Either",
            REEMBED_HOW,
            f"  - go back to {have.name}: {settings_hint(have)}{_now(s)}.",
        ]
    )


def _unrecorded(
    want: ModelIdentity, collection: str, match: bool | None, s: Settings | None
) -> str:
    if match is None:
        first = (
            f"the store holds memories but the Milvus collection {collection!r} holds none "
            f"of their vectors; they must be embedded with the configured model {want}:"
        )
        return "\n".join([first, REEMBED_HOW.removesuffix(", or") + "."])
    legacy = ModelIdentity(LEGACY_MODEL, 384)
    return "\n".join(
        [
            f"the store's vectors were not made by the configured embedding model {want} "
            f"(up to {SAMPLE} stored memories embedded again and compared). The store "
            "predates recorded models; unless another model was configured then, its "
            f"vectors are those of {legacy}, the default of that time. Either",
            REEMBED_HOW,
            f"  - go back to the model that made them, e.g. {settings_hint(legacy)}{_now(s)}.",
        ]
    )


def _interrupted(cp: Checkpoint) -> str:
    return (
        f"a re-embed of the store to {cp.target} (started {cp.started_at}) stopped after "
        f"{cp.done} memories: its vectors are part one model, part another. Finish it with "
        "`memstream reembed` (it resumes with the same model), or start over with "
        "`memstream reembed --restart`."
    )


def settings_hint(model: ModelIdentity) -> str:
    """The settings that most likely name ``model`` (its name is ``provider:model``)."""
    provider, _, label = model.name.partition(":")
    return (
        f"set MEMSTREAM_EMBEDDING_PROVIDER={provider} MEMSTREAM_EMBEDDING_MODEL={label} "
        f"MEMSTREAM_EMBEDDING_DIM={model.dim}"
    )


def _now(s: Settings | None) -> str:
    if s is None:
        return ""
    return (
        f" (now: provider {s.embedding_provider}, model {s.embedding_model or '(default)'}, "
        f"dim {s.embedding_dim})"
    )
