"""The local transformers embedder with the bundled all-MiniLM-L6-v2 (loaded once)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from core.settings import Settings
from models.bench import bench_embedding
from models.embedding.hf import TransformersEmbedder
from models.errors import ModelConfigError
from models.factory import build_embedder

TEXTS = ["I play guitar", "I like musical instruments", "the stock market fell"]


@pytest.fixture(scope="module")
def embedder() -> TransformersEmbedder:
    settings = Settings(
        embedding_provider="transformers",
        embedding_model="",
        embedding_dim=384,
        embedding_cache_size=4,
        embedding_batch_size=2,
    )
    emb = build_embedder(settings)
    assert isinstance(emb, TransformersEmbedder)
    return emb


def test_vectors_have_384_dims_and_unit_norm(embedder):
    out = embedder.embed(TEXTS)
    assert embedder.dim == 384
    assert out.shape == (3, 384) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_related_sentences_are_closer(embedder):
    guitar, instruments, market = embedder.embed(TEXTS)
    assert guitar @ instruments > guitar @ market + 0.3


def test_batch_and_single_give_the_same_vectors(embedder):
    batch = embedder.embed(TEXTS + ["a much longer sentence that forces padding in its batch"])
    single = np.stack([embedder.embed([t])[0] for t in TEXTS])
    assert np.allclose(batch[:3], single, atol=1e-5)
    assert np.allclose(embedder.embed_query(TEXTS[0]), single[0], atol=1e-5)


def test_query_cache_returns_copies_and_stays_bounded(embedder):
    first = embedder.embed_query("what instrument do I play?")
    first[:] = 0  # a caller scribbling on its vector must not poison the cache
    again = embedder.embed_query("what instrument do I play?")
    assert np.isclose(np.linalg.norm(again), 1.0)
    for i in range(10):
        embedder.embed_query(f"query {i}")
    assert len(embedder._cache) <= 4


def test_concurrent_callers_get_consistent_vectors(embedder):
    expected = embedder.embed(TEXTS)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: embedder.embed(TEXTS), range(8)))
    for got in results:
        assert np.allclose(got, expected, atol=1e-5)


def test_empty_input(embedder):
    assert embedder.embed([]).shape == (0, 384)


def test_missing_model_is_a_config_error(tmp_path):
    with pytest.raises(ModelConfigError):
        TransformersEmbedder(str(tmp_path / "no-such-model"))


def test_dimension_mismatch_is_a_config_error():
    with pytest.raises(ModelConfigError, match="768"):
        TransformersEmbedder(dim=768)


def test_bench_reports_numbers(embedder):
    report = bench_embedding(Settings(), n=16, embedder=embedder, queries=5)
    assert report["dim"] == 384 and report["n"] == 16 and report["single_queries"] == 5
    assert report["sentences_per_s"] > 0 and report["single_median_ms"] > 0
