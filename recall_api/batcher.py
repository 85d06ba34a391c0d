"""Query embedding micro-batching: concurrent recalls share one model call.

On two CPU cores a single MiniLM query costs ~9 ms while a batch costs ~2.7 ms a
sentence, so under load the queries that arrive within ``window_ms`` (2 ms) of the
first one — and whatever queued up while the model was busy — are embedded together
by one worker thread. At low load a query waits at most ``window_ms``.

Repeated queries never reach the queue: the LRU in front of it answers them in
microseconds on the caller's thread (agents ask the same things often). It is the
embedder's own ``query_cache`` (one query-vector cache, not two stacked); an embedder
without one gets one here. A batch goes through ``embedder.embed_queries`` (the model's
query form: e5 embeds a question with ``query:``, a stored text with ``passage:``).
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future

import numpy as np

from core import metrics
from core.seams import EmbedderLike, QueryVectors
from models.embedding.base import QueryCache


class QueryBatcher:
    def __init__(
        self,
        embedder: EmbedderLike,
        window_ms: float = 2.0,
        max_batch: int = 32,
        cache_size: int = 4096,
    ) -> None:
        self.embedder = embedder
        self.window_s = window_ms / 1000.0
        self.max_batch = max(1, max_batch)
        cache = embedder.query_cache  # the seam's: one query-vector cache, not two
        if cache is None and cache_size > 0:
            cache = QueryCache(cache_size)
        self._cache: QueryVectors | None = cache
        self._hits_lock = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[str, Future[np.ndarray]] | None] = queue.SimpleQueue()
        self.calls = 0  # model calls made (for the bench report)
        self.embedded = 0  # queries embedded by those calls
        self.cache_hits = 0
        self._thread = threading.Thread(target=self._run, name="query-batcher", daemon=True)
        self._thread.start()

    def embed(self, text: str, timeout: float | None = None) -> np.ndarray:
        """The unit vector of ``text``; raises TimeoutError past ``timeout`` seconds."""
        return self.submit(text).result(timeout)

    def submit(self, text: str) -> Future[np.ndarray]:
        """``text``'s vector as a future, without waiting: a cached text's is already
        done. A cold recall submits its query before it waits for the user's load, so
        the two overlap instead of adding up."""
        fut: Future[np.ndarray] = Future()
        hit = self._cache.get(text) if self._cache is not None else None
        if hit is not None:
            with self._hits_lock:
                self.cache_hits += 1
            metrics.QUERY_CACHE_HIT.inc()
            fut.set_result(hit)
            return fut
        metrics.QUERY_CACHE_MISS.inc()
        self._queue.put((text, fut))
        return fut

    def close(self) -> None:
        self._queue.put(None)

    def _collect(self, first: tuple[str, Future[np.ndarray]]) -> list:
        batch = [first]
        end = time.monotonic() + self.window_s
        while len(batch) < self.max_batch:
            remaining = end - time.monotonic()
            try:
                item = (
                    self._queue.get(timeout=remaining)
                    if remaining > 0
                    else (self._queue.get_nowait())
                )
            except queue.Empty:
                break
            if item is None:
                self._queue.put(None)  # let the loop see the stop after this batch
                break
            batch.append(item)
        return batch

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = self._collect(first)
            texts = list(dict.fromkeys(text for text, _ in batch))
            try:
                vectors = np.asarray(self.embedder.embed_queries(texts))
            except Exception as exc:  # every waiter learns why; the thread lives on
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            self.calls += 1
            self.embedded += len(texts)
            by_text = {t: vectors[i] for i, t in enumerate(texts)}
            self._remember(by_text)
            for text, fut in batch:
                if not fut.done():
                    fut.set_result(by_text[text])

    def _remember(self, by_text: dict[str, np.ndarray]) -> None:
        if self._cache is not None:
            for text, vec in by_text.items():
                self._cache.put(text, vec)  # read-only: shared by every caller of the text
