"""The embedding interface and what every provider shares: batching, norms, a query cache.

A provider implements one hook, ``_embed_batch``; the base sorts texts by length (less
padding per batch), cuts batches, L2-normalizes, checks the dimension and keeps a small
thread-safe LRU cache for repeated query strings (recall sees the same queries often):
``query_cache``, the one query-vector cache, which the recall API's batcher shares.
Vectors are float32 with unit norm, so cosine similarity is a dot product downstream.

Asymmetric models (e5) embed a question and a stored text differently: ``embed`` is
for what is stored and compared with stored texts (facts, turns, merged memories),
``embed_queries`` / ``embed_query`` for recall questions. A model's
``passage_prefix`` / ``query_prefix`` are prepended to the texts; both are empty for
symmetric models, where the two forms are the same call.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
from cachetools import LRUCache

from core.seams import EmbedderLike
from models.errors import MalformedOutput

T = TypeVar("T")
R = TypeVar("R")


class QueryCache:
    """Query vectors by text: a cachetools LRU behind a lock (the API's worker threads and
    the query batcher share it). The vectors it holds are read-only: readers share them.
    A hit costs ~1.0 us, the hand-written OrderedDict it replaced ~0.9 us (measured)."""

    def __init__(self, size: int) -> None:
        self._lru: LRUCache[str, np.ndarray] = LRUCache(maxsize=size)
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        """The cached vector of ``text`` (now the most recent), or ``None``."""
        with self._lock:
            return self._lru.get(text)

    def put(self, text: str, vec: np.ndarray) -> None:
        vec.setflags(write=False)
        with self._lock:
            self._lru[text] = vec

    def __len__(self) -> int:
        return len(self._lru)


class Embedder(EmbedderLike):
    """What every provider of ``core.seams.EmbedderLike`` shares (the seam is the one
    interface type): batching, norms, lanes and the query cache. A provider gives
    ``name`` and the hook ``_embed_batch``."""

    passage_prefix = ""
    query_prefix = ""
    runtime = "remote"  # where the model runs: "onnx"/"torch" in this process, else remote

    def __init__(
        self, *, dim: int, batch_size: int = 64, cache_size: int = 0, lanes: int = 1
    ) -> None:
        self._dim = dim
        self.batch_size = max(1, batch_size)
        self._cache = QueryCache(cache_size) if cache_size > 0 else None
        # Parts of one batch that run at once, each on its own thread (``in_lanes``: for a
        # provider whose model runs release the GIL; see E5Embedder for why). Stored texts
        # only: a recall question never queues behind the ingest flow's parts on a lane.
        self.lanes = max(1, lanes)
        self._lanes = (
            ThreadPoolExecutor(self.lanes, thread_name_prefix="memstream-lane")
            if self.lanes > 1
            else None
        )
        self._solo = threading.local()  # set while this thread embeds questions

    @property
    def query_cache(self) -> QueryCache | None:
        """The LRU of ``embed_query`` (``None`` when ``cache_size`` is 0)."""
        return self._cache

    @property
    def dim(self) -> int:
        """Vector size; the Milvus collection and the hot caches are built with it."""
        return self._dim

    @abstractmethod
    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        """Raw vectors for one batch, shape (len(texts), dim); need not be normalized."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of stored texts in their order: shape (n, dim), float32, unit norm."""
        return self._embed_all([self.passage_prefix + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of recall questions, as ``embed`` (the query form of the model)."""
        self._solo.on = True
        try:
            return self._embed_all([self.query_prefix + t for t in texts])
        finally:
            self._solo.on = False

    def _embed_all(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._checked(self._embed_batch([texts[i] for i in idx]), len(idx))
        return out

    def lanes_now(self) -> int:
        """The lanes this thread's call may use: 1 while it embeds questions."""
        return 1 if self._lanes is None or getattr(self._solo, "on", False) else self.lanes

    def in_lanes(self, fn: Callable[[T], R], parts: Sequence[T]) -> list[R]:
        """``fn`` of each part, in order; parts run at once on the lanes' threads, the
        first parts first (give the biggest first: the lanes then end together), or all
        on the caller's thread when ``lanes_now`` is 1."""
        if self._lanes is None or len(parts) < 2 or self.lanes_now() == 1:
            return [fn(p) for p in parts]
        return list(self._lanes.map(fn, parts))  # raises the first part's error

    def embed_query(self, text: str) -> np.ndarray:
        """One question's vector, shape (dim,), from the LRU cache when the text was seen."""
        if self._cache is None:
            return self.embed_queries([text])[0]
        vec = self._cache.get(text)
        if vec is None:
            vec = self.embed_queries([text])[0]
            self._cache.put(text, vec)
        return vec.copy()  # a caller may write on its vector; the cached one is shared

    def close(self) -> None:
        """Release clients or memory held by the provider (the lanes' threads here)."""
        if self._lanes is not None:
            self._lanes.shutdown(wait=False)

    def _checked(self, raw: np.ndarray, n: int) -> np.ndarray:
        arr = np.asarray(raw, dtype=np.float32)
        if arr.shape != (n, self._dim):
            raise MalformedOutput(
                f"{self.name}: expected vectors of shape ({n}, {self._dim}), got {arr.shape}"
            )
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise MalformedOutput(f"{self.name}: got a zero or non-finite vector")
        return arr / norms
