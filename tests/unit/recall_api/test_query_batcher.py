"""Query micro-batching: concurrent queries share a model call; repeats skip the queue."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from recall_api.batcher import QueryBatcher


class FakeEmbedder:
    """Vectors derived from the text; each call sleeps like a model would.

    Like e5, it embeds a question (``embed_queries``) differently from a stored text.
    """

    query_cache = None  # keeps none: the batcher makes its own

    def __init__(self, delay: float = 0.01) -> None:
        self.delay = delay
        self.calls: list[list[str]] = []
        self.lock = threading.Lock()

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(8, dtype=np.float32)
        v[hash(text) % 8] = 1.0
        return v

    def embed(self, texts: list[str]) -> np.ndarray:
        with self.lock:
            self.calls.append(list(texts))
        time.sleep(self.delay)
        return np.stack([self._vec(t) for t in texts])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed([f"query: {t}" for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]


def test_concurrent_queries_are_embedded_together_and_correctly():
    fake = FakeEmbedder()
    batcher = QueryBatcher(fake, window_ms=5, max_batch=32)
    texts = [f"query {i}" for i in range(24)]
    with ThreadPoolExecutor(24) as pool:
        got = list(pool.map(lambda t: batcher.embed(t, timeout=5), texts))
    for text, vec in zip(texts, got, strict=True):
        assert np.array_equal(vec, fake._vec(f"query: {text}"))  # the query form, batched too
    assert len(fake.calls) < len(texts) / 3
    assert sum(len(c) for c in fake.calls) == len(texts)
    batcher.close()


def test_repeated_query_is_served_from_the_cache():
    fake = FakeEmbedder(delay=0)
    batcher = QueryBatcher(fake, window_ms=0)
    first = batcher.embed("where do I live", timeout=5)
    again = batcher.embed("where do I live", timeout=5)
    assert np.array_equal(first, again) and len(fake.calls) == 1 and batcher.cache_hits == 1
    batcher.close()


def test_model_error_reaches_every_waiter_and_the_worker_survives():
    class Failing(FakeEmbedder):
        def embed(self, texts: list[str]) -> np.ndarray:
            if any("bad" in t for t in texts):
                raise RuntimeError("model crashed")
            return super().embed(texts)

    batcher = QueryBatcher(Failing(delay=0), window_ms=0)
    with pytest.raises(RuntimeError, match="model crashed"):
        batcher.embed("bad query", timeout=5)
    assert batcher.embed("good query", timeout=5).shape == (8,)
    batcher.close()


def test_waiting_past_the_timeout_raises_timeout_error():
    batcher = QueryBatcher(FakeEmbedder(delay=0.5), window_ms=0)
    with pytest.raises(TimeoutError):
        batcher.embed("slow", timeout=0.05)
    batcher.close()


def test_submit_returns_at_once_and_a_cached_text_is_already_done():
    fake = FakeEmbedder(delay=0.2)
    batcher = QueryBatcher(fake, window_ms=1)
    started = time.monotonic()
    fut = batcher.submit("where do I live")
    assert time.monotonic() - started < 0.1  # queued, not embedded on the caller
    vec = fut.result(timeout=5)
    assert np.allclose(vec, fake._vec("query: where do I live"))
    again = batcher.submit("where do I live")
    assert again.done() and again.result() is vec  # the cache answered, no model call
    assert len(fake.calls) == 1 and batcher.cache_hits == 1
    batcher.close()


def test_the_batcher_and_the_embedder_share_one_query_cache():
    from models.embedding.base import Embedder

    class Counting(Embedder):
        name = "counting"

        def __init__(self) -> None:
            super().__init__(dim=4, cache_size=8)
            self.batches: list[list[str]] = []

        def _embed_batch(self, texts: list[str]) -> np.ndarray:
            self.batches.append(texts)
            return np.ones((len(texts), 4), dtype=np.float32)

    emb = Counting()
    batcher = QueryBatcher(emb, window_ms=0, cache_size=8)
    vec = batcher.embed("where do I live", timeout=5)
    assert np.array_equal(emb.embed_query("where do I live"), vec)  # no second model call
    emb.embed_query("what do I eat")
    assert batcher.submit("what do I eat").done() and batcher.cache_hits == 1
    assert len(emb.batches) == 2 and len(emb.query_cache) == 2
    with pytest.raises(ValueError):
        vec[0] = 0  # the cached vector is shared, so read-only
    batcher.close()
