"""Store errors.

StoreError
├── StoreUnavailable   the backend did not answer (retry later; readiness is false)
├── SchemaMismatch     the store holds a newer schema than this code knows
└── ModelMismatch      the store's vectors were made by another embedding model
"""

from __future__ import annotations


class StoreError(RuntimeError):
    """Base of every error raised by a sink."""


class StoreUnavailable(StoreError):
    """The backend did not answer in time; the operation may be retried."""


class SchemaMismatch(StoreError):
    """The store was migrated by a newer memstream; refuse to write to it."""


class ModelMismatch(StoreError):
    """The configured embedder is not the model that made the store's vectors (or a
    re-embed is unfinished); the message names both and how to resolve it."""
