"""Provider ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint.

OpenAI, vLLM, Ollama, llama.cpp, TEI and most hosted gateways speak this shape. The
endpoint's vectors must have ``embedding_dim`` entries, because the stores were built
with that size; a mismatch is a MalformedOutput rather than silently bad recall.
"""

from __future__ import annotations

import httpx
import numpy as np

from models.embedding.base import Embedder
from models.errors import EmbeddingTimeout, EmbeddingUnavailable, MalformedOutput
from models.http import Failures, OpenAICompatible


class OpenAIEmbedder(OpenAICompatible, Embedder):
    """Batches go out as one request each; order is restored from each item's index."""

    PATH = "embeddings"
    FAILURES = Failures(EmbeddingUnavailable, EmbeddingTimeout, retry_timeouts=True)

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        dim: int,
        api_key: str = "",
        batch_size: int = 64,
        cache_size: int = 0,
        timeout_s: float = 10.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        client: httpx.Client | None = None,
    ) -> None:
        super().__init__(dim=dim, batch_size=batch_size, cache_size=cache_size)
        self._model = model
        self._connect(base_url, api_key, timeout_s, max_retries, backoff_s, client)

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        body = self._http.post({"model": self._model, "input": texts})
        data = body.get("data")
        if not isinstance(data, list) or len(data) != len(texts):
            raise MalformedOutput(
                f"{self._http.url}: expected {len(texts)} embeddings in 'data', "
                f"got {len(data) if isinstance(data, list) else type(data).__name__}"
            )
        try:
            items = sorted(data, key=lambda d: int(d.get("index", 0)))
            rows = [np.asarray(item["embedding"], dtype=np.float32) for item in items]
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise MalformedOutput(f"{self._http.url}: bad embedding item: {exc}") from exc
        if any(row.shape != (self.dim,) for row in rows):
            raise MalformedOutput(
                f"{self._http.url}: vectors are not {self.dim}-d (set embedding_dim to match)"
            )
        return np.stack(rows)
