"""What the stores, flows and API use of an embedder: the seam, as a structural type.

``models.embedding.base.Embedder`` is the one implementation family; this protocol lives
in core because sinks (the store-model check, re-embedding) use an embedder too and may
not import models. A test's stand-in satisfies it without subclassing anything.
The LLM's seam is ``models.llm.base.LLMLike`` (its values are models' types).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class EmbedderLike(Protocol):
    """Texts in, a float32 matrix of unit-norm rows out; safe to call from many threads."""

    @property
    def name(self) -> str:
        """Provider and model (the store records it: ``sinks.store_model``)."""
        ...

    @property
    def dim(self) -> int:
        """Vector size."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of stored texts in their order, shape (n, dim)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of recall questions (the model's query form), shape (n, dim)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One question's vector, shape (dim,)."""
        ...

    def close(self) -> None:
        """Release what the provider holds."""
        ...
