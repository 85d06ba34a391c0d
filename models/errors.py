"""Errors of the model adapters: one base, a few specific kinds the callers act on.

Callers catch by type, because each kind asks for a different reaction:

    ModelError                      anything that went wrong in models/
    ├── ModelConfigError            settings or local files cannot work (bad path, dimension
    │                               mismatch, missing model): fix the configuration, retrying
    │                               will not help
    ├── ModelUnavailable            the provider did not answer usefully (connection refused,
    │   │                           HTTP 5xx/429 after retries, other HTTP 4xx)
    │   ├── LLMUnavailable
    │   │   └── LLMTimeout          no answer within llm_timeout_s
    │   └── EmbeddingUnavailable
    │       └── EmbeddingTimeout
    └── MalformedOutput             the provider answered, but not with what was asked (not
        │                           JSON, wrong shape, wrong vector size) after one re-ask
        └── InventedId              an evolution decision names a memory id it was not given

Ingest maps them: extraction failures (any ModelError) fail the task visibly (DLQ, task
status, API code 50001); evolution failures degrade to append + hash dedup
(:func:`models.degrade.decide_or_degrade`). Memory content never goes into messages
beyond a short excerpt of a provider's own error body.
"""

from __future__ import annotations


class ModelError(Exception):
    """Base of every error raised by the model adapters."""


class ModelConfigError(ModelError):
    """The configured model cannot be built from these settings or files."""


class ModelUnavailable(ModelError):
    """The provider could not be reached or refused the request (after retries)."""

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after_s: float | None = None  # the server's Retry-After, if it sent one


class LLMUnavailable(ModelUnavailable):
    """The LLM endpoint or local LLM failed to answer."""


class LLMTimeout(LLMUnavailable):
    """The LLM gave no answer within its timeout."""


class EmbeddingUnavailable(ModelUnavailable):
    """The embedding endpoint failed to answer."""


class EmbeddingTimeout(EmbeddingUnavailable):
    """The embedding endpoint gave no answer within its timeout."""


class MalformedOutput(ModelError):
    """The provider's answer does not have the requested shape, even after a re-ask."""


class InventedId(MalformedOutput):
    """An evolution decision refers to a memory id that was not among the candidates."""
