"""Text → unit vectors. ``base.Embedder`` is the interface; one module per provider."""

from models.embedding.base import Embedder

__all__ = ["Embedder"]
