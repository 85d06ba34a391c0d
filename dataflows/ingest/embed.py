"""Embedding step: one model call for the facts of many users' batches.

Identical texts in a batch are embedded once, and the hot indexes of every user in the
batch are prefetched together (one ClickHouse query, one Milvus read) so the keyed
writer that follows never loads users one by one.

A fact the writer will not store is not embedded: one its user already holds in the
scope the writer dedups in (an exact duplicate: the writer skips it) or a replay of a
memory already written (a restarted flow). Those take the held row's vector, so a
writer that finds the duplicate gone meanwhile still has one (~10 % of RealMem's facts).

The work is split in two so the model can run off the worker's thread
(``dataflows.ingest.overlap``): ``prepare`` (the hot indexes, the held twins, the
distinct texts) runs where the writer runs, ``Todo.model`` is the model call alone
(ONNX Runtime releases the GIL), and ``Todo.done`` hands the vectors out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import metrics
from core.hashing import content_hash
from core.seams import EmbedderLike
from core.user_index import UserIndex
from dataflows.ingest.items import Extracted, FactItem
from dataflows.ingest.writer import exact_duplicate
from memstream.schemas.tenants import UserKey
from sinks.hot_cache import HotCache


@dataclass
class Todo:
    """What ``batches`` still need from the model: ``texts``, distinct, for ``facts``."""

    batches: list[Extracted]
    facts: list[FactItem]
    texts: list[str]

    def model(self, embedder: EmbedderLike) -> np.ndarray:
        """The model call alone: touches no index, so it may run on another thread."""
        if not self.texts:
            return np.empty((0, embedder.dim), dtype=np.float32)
        with metrics.ingest_stage("embed_model"):
            return embedder.embed(self.texts)

    def done(self, vectors: np.ndarray) -> list[Extracted]:
        """``batches``, every fact with its vector."""
        by_text = dict(zip(self.texts, vectors, strict=True))
        for f in self.facts:
            f.vector = by_text[f.fact.text.strip()]
        return self.batches


def prepare(cache: HotCache, batches: list[Extracted]) -> Todo:
    """Warm the batches' users, give held twins their vectors, list the texts left."""
    with metrics.ingest_stage("embed_load"):
        cache.warm([UserKey(b.tenant_id, b.user_id) for b in batches])
    todo: list[FactItem] = []
    for b in batches:
        todo += _not_held(cache.peek(b.user_id, tenant=b.tenant_id), b.facts)
    texts = list(dict.fromkeys(f.fact.text.strip() for f in todo))
    return Todo(batches, todo, texts)


def embed_all(embedder: EmbedderLike, cache: HotCache, batches: list[Extracted]) -> list[Extracted]:
    """``prepare``, the model and ``done`` in a row, on the caller's thread."""
    todo = prepare(cache, batches)
    return todo.done(todo.model(embedder))


def _not_held(idx: UserIndex | None, facts: list[FactItem]) -> list[FactItem]:
    """The facts that need the model; the others get their held twin's vector."""
    if idx is None or not facts:
        return facts
    out = []
    with idx.lock:
        for f in facts:
            held = f.memory_id if f.memory_id in idx else None
            if held is None:
                held = exact_duplicate(idx, f, content_hash(f.fact.text.strip()))
            vector = None if held is None else idx.vector(held)
            if vector is None:
                out.append(f)
            else:
                f.vector = vector
    return out
