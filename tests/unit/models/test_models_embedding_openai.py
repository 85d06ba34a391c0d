"""The OpenAI-compatible embeddings adapter against a scripted local server."""

from __future__ import annotations

import numpy as np
import pytest

from models.embedding.openai_compat import OpenAIEmbedder
from models.errors import EmbeddingTimeout, EmbeddingUnavailable, MalformedOutput
from models.http import endpoint_url


def vectors(n: int, dim: int = 4, reverse: bool = False) -> dict:
    data = [
        {"object": "embedding", "index": i, "embedding": [float(i + 1)] + [1.0] * (dim - 1)}
        for i in range(n)
    ]
    return {"object": "list", "data": data[::-1] if reverse else data}


def make(url: str, **kw) -> OpenAIEmbedder:
    kw.setdefault("dim", 4)
    return OpenAIEmbedder(url, model="emb-model", api_key="k", backoff_s=0, **kw)


def test_vectors_come_back_normalized_and_in_order(scripted):
    scripted.push(vectors(3, reverse=True))
    out = make(scripted.url).embed(["a", "bb", "ccc"])
    req = scripted.requests[0]
    assert req["path"] == "/v1/embeddings" and req["json"]["model"] == "emb-model"
    assert out.dtype == np.float32 and out.shape == (3, 4)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    # texts were sent longest first; each answer row maps back to its own text
    sent = req["json"]["input"]
    assert sent == ["ccc", "bb", "a"]
    expected_first = np.array([3.0, 1, 1, 1]) / np.linalg.norm([3.0, 1, 1, 1])
    assert np.allclose(out[0], expected_first)


def test_batches_are_cut_by_batch_size(scripted):
    for n in (2, 2, 1):
        scripted.push(vectors(n))
    out = make(scripted.url, batch_size=2).embed(["x1", "x2", "x3", "x4", "x5"])
    assert out.shape == (5, 4) and len(scripted.requests) == 3


def test_wrong_dimension_is_malformed(scripted):
    scripted.push(vectors(1, dim=3))
    with pytest.raises(MalformedOutput):
        make(scripted.url).embed(["hello"])


def test_server_error_is_retried(scripted):
    scripted.push({"error": "busy"}, status=503)
    scripted.push(vectors(1))
    assert make(scripted.url, max_retries=1).embed(["hello"]).shape == (1, 4)
    assert len(scripted.requests) == 2


def test_persistent_errors_raise_unavailable(scripted):
    for _ in range(3):
        scripted.push({"error": "down"}, status=500)
    with pytest.raises(EmbeddingUnavailable):
        make(scripted.url, max_retries=2).embed(["hello"])
    assert len(scripted.requests) == 3


def test_slow_endpoint_times_out(scripted):
    scripted.push(vectors(1), delay=1.5)
    with pytest.raises(EmbeddingTimeout):
        make(scripted.url, timeout_s=0.2, max_retries=0).embed(["hello"])


def test_query_cache_avoids_a_second_request(scripted):
    scripted.push(vectors(1))
    emb = make(scripted.url, cache_size=8)
    first = emb.embed_query("same question")
    second = emb.embed_query("same question")
    assert np.array_equal(first, second) and len(scripted.requests) == 1


def test_empty_input_makes_no_request(scripted):
    assert make(scripted.url).embed([]).shape == (0, 4)
    assert scripted.requests == []


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://h:1", "http://h:1/v1/embeddings"),
        ("http://h:1/v1/", "http://h:1/v1/embeddings"),
        ("https://x/compatible-mode/v1", "https://x/compatible-mode/v1/embeddings"),
        ("https://x/api/v3", "https://x/api/v3/embeddings"),
    ],
)
def test_endpoint_url_adds_v1_only_when_missing(base, url):
    assert endpoint_url(base, "embeddings") == url
