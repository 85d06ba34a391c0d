"""Store errors.

StoreError
├── StoreUnavailable   the backend did not answer (retry later; readiness is false)
└── SchemaMismatch     the store holds a newer schema than this code knows
"""

from __future__ import annotations


class StoreError(RuntimeError):
    """Base of every error raised by a sink."""


class StoreUnavailable(StoreError):
    """The backend did not answer in time; the operation may be retried."""


class SchemaMismatch(StoreError):
    """The store was migrated by a newer memstream; refuse to write to it."""
