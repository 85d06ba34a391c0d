"""Embedding throughput and latency on this machine, for ``memstream bench embed``.

Throughput: ~n sentences embedded in batches of ``embedding_batch_size``. Latency: the
median (and p95) of single queries with the query cache off, so every call runs the
model, in its query form. Sentences are synthetic but shaped like extracted facts
(8-16 words).
"""

from __future__ import annotations

import itertools
import statistics
import time

from core.settings import Settings
from memstream.schemas.json_types import JsonObject
from models.embedding.base import Embedder
from models.factory import build_embedder

_SUBJECTS = ["User", "The user", "My sister", "Our team lead", "The assistant", "My doctor"]
_VERBS = [
    "likes",
    "plans to visit",
    "works at",
    "is allergic to",
    "moved to",
    "prefers",
    "is learning",
    "bought a ticket to",
    "usually reads about",
    "wants to try",
]
_OBJECTS = [
    "spicy Sichuan food",
    "Berlin in the spring",
    "a small robotics startup",
    "peanuts and shellfish",
    "Shanghai next month",
    "green tea over coffee",
    "the violin on weekends",
    "Lisbon for the conference",
    "medieval history",
    "rock climbing with friends",
]
_TAILS = [
    "",
    " every Tuesday",
    " since 2019",
    " after work",
    " with the whole family",
    " because it is relaxing",
]


def sentences(n: int) -> list[str]:
    """n distinct fact-like sentences (deterministic)."""
    combos = itertools.product(_SUBJECTS, _VERBS, _OBJECTS, _TAILS)
    out = [f"{s} {v} {o}{t} (#{i})" for i, (s, v, o, t) in enumerate(combos)]
    while len(out) < n:
        out += [f"{x} again" for x in out[: n - len(out)]]
    return out[:n]


def bench_embedding(
    settings: Settings, n: int = 1000, *, embedder: Embedder | None = None, queries: int = 200
) -> JsonObject:
    """Measure batch throughput and single-query latency; returns plain numbers."""
    started = time.perf_counter()
    emb = embedder or build_embedder(settings.model_copy(update={"embedding_cache_size": 0}))
    load_s = time.perf_counter() - started
    texts = sentences(n)
    emb.embed(texts[: min(8, n)])  # warm-up: first call allocates and JITs kernels
    t0 = time.perf_counter()
    emb.embed(texts)
    batch_s = time.perf_counter() - t0
    lat_ms: list[float] = []
    for text in sentences(queries):
        t1 = time.perf_counter()
        emb.embed_queries([f"what does {text.lower()}?"])
        lat_ms.append((time.perf_counter() - t1) * 1000)
    lat_ms.sort()
    return {
        "provider": emb.name,
        "dim": emb.dim,
        "runtime": emb.runtime,
        "threads": settings.embedding_threads,
        "batch_size": emb.batch_size,
        "n": n,
        "load_s": round(load_s, 3),
        "batch_total_s": round(batch_s, 3),
        "sentences_per_s": round(n / batch_s, 1) if batch_s > 0 else float("inf"),
        "single_queries": queries,
        "single_median_ms": round(statistics.median(lat_ms), 2) if lat_ms else None,
        "single_p95_ms": round(lat_ms[int(0.95 * (len(lat_ms) - 1))], 2) if lat_ms else None,
    }
