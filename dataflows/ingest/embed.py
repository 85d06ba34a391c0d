"""Embedding step: one model call for the facts of many users' batches."""

from __future__ import annotations

from dataflows.ingest.items import Extracted


def embed_all(embedder: object, batches: list[Extracted]) -> list[Extracted]:
    facts = [f for b in batches for f in b.facts]
    if facts:
        vectors = embedder.embed([f.fact.text.strip() for f in facts])
        for f, v in zip(facts, vectors, strict=True):
            f.vector = v
    return batches
