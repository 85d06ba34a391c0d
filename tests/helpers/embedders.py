"""A second, tiny embedding model for tests: our own ``Embedder`` interface, no weights.

Words are hashed (blake2b) into signed buckets, so the vectors are deterministic and
unlike any real model's: the store-model tests use it as "model B" beside the session's
real embedder ("model A").
"""

from __future__ import annotations

import hashlib

import numpy as np

from models.embedding.base import Embedder


class HashedWords(Embedder):
    def __init__(self, dim: int) -> None:
        super().__init__(dim=dim, batch_size=16)

    @property
    def name(self) -> str:
        return f"test:hashed-words-{self.dim}"

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 0.01  # never a zero vector
        for i, text in enumerate(texts):
            for word in text.lower().split():
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                out[i, h % self.dim] += 1.0 if h >> 63 else -1.0
        return out
