"""Embedding step: one model call for the facts of many users' batches.

Identical texts in a batch are embedded once, and the hot indexes of every user in the
batch are prefetched together (one ClickHouse query, one Milvus read) so the keyed
writer that follows never loads users one by one.

A fact the writer will not store is not embedded: one its user already holds in the
scope the writer dedups in (an exact duplicate: the writer skips it) or a replay of a
memory already written (a restarted flow). Those take the held row's vector, so a
writer that finds the duplicate gone meanwhile still has one (~10 % of RealMem's facts).
"""

from __future__ import annotations

from core import metrics
from core.hashing import content_hash
from core.seams import EmbedderLike
from core.user_index import UserIndex
from dataflows.ingest.items import Extracted, FactItem
from dataflows.ingest.writer import exact_duplicate
from schemas.tenants import UserKey
from sinks.hot_cache import HotCache


def embed_all(embedder: EmbedderLike, cache: HotCache, batches: list[Extracted]) -> list[Extracted]:
    with metrics.ingest_stage("embed_load"):
        cache.warm([UserKey(b.tenant_id, b.user_id) for b in batches])
    todo: list[FactItem] = []
    for b in batches:
        todo += _not_held(cache.peek(b.user_id, tenant=b.tenant_id), b.facts)
    if todo:
        texts = list(dict.fromkeys(f.fact.text.strip() for f in todo))
        with metrics.ingest_stage("embed_model"):
            vectors = dict(zip(texts, embedder.embed(texts), strict=True))
        for f in todo:
            f.vector = vectors[f.fact.text.strip()]
    return batches


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
