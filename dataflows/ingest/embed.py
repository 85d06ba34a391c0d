"""Embedding step: one model call for the facts of many users' batches.

Identical texts in a batch are embedded once, and the hot indexes of every user in the
batch are prefetched together (one ClickHouse query, one Milvus read) so the keyed
writer that follows never loads users one by one.
"""

from __future__ import annotations

from core import metrics
from dataflows.ingest.items import Extracted
from schemas.tenants import UserKey


def embed_all(embedder: object, cache: object, batches: list[Extracted]) -> list[Extracted]:
    with metrics.ingest_stage("embed_load"):
        cache.warm([UserKey(b.tenant_id, b.user_id) for b in batches])
    facts = [f for b in batches for f in b.facts]
    if facts:
        texts = list(dict.fromkeys(f.fact.text.strip() for f in facts))
        with metrics.ingest_stage("embed_model"):
            vectors = dict(zip(texts, embedder.embed(texts), strict=True))
        for f in facts:
            f.vector = vectors[f.fact.text.strip()]
    return batches
