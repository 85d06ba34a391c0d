"""Store errors.

StoreError
├── StoreUnavailable   the backend did not answer (retry later; readiness is false)
│   └── TopicsNotReady   a flow's topics had no partitions in Kafka's metadata in time
├── SchemaMismatch     the store holds a newer schema than this code knows
└── ModelMismatch      the store's vectors were made by another embedding model
"""

from __future__ import annotations


class StoreError(RuntimeError):
    """Base of every error raised by a sink."""


class StoreUnavailable(StoreError):
    """The backend did not answer in time; the operation may be retried."""


class TopicsNotReady(StoreUnavailable):
    """Kafka's metadata did not give every topic a flow reads its partitions in time
    (missing, or no leader yet); the message names each topic and what it lacked."""


class SchemaMismatch(StoreError):
    """The store was migrated by a newer memstream; refuse to write to it."""


class ModelMismatch(StoreError):
    """The configured embedder is not the model that made the store's vectors (or a
    re-embed is unfinished); the message names both and how to resolve it."""
