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
        embedding_model="all-MiniLM-L6-v2",  # the default is multilingual-e5-small
        embedding_dim=384,
        embedding_cache_size=4,
        embedding_batch_size=2,
    )
    emb = build_embedder(settings)
    assert isinstance(emb, TransformersEmbedder)
    return emb


def test_minilm_names_select_the_bundled_model(embedder):
    assert embedder.name == "transformers:all-MiniLM-L6-v2"
    again = build_embedder(Settings(embedding_model="sentence-transformers/all-MiniLM-L6-v2"))
    assert isinstance(again, TransformersEmbedder) and again.name == embedder.name
    assert embedder.embed_queries(TEXTS).shape == (3, 384)  # symmetric: no query prefix
    assert np.allclose(embedder.embed_queries(TEXTS), embedder.embed(TEXTS), atol=1e-6)


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


def test_onnx_runtime_gives_the_torch_vectors(embedder):
    assert embedder.runtime == "onnx"
    torch_emb = TransformersEmbedder(runtime="torch")
    assert torch_emb.runtime == "torch"
    texts = TEXTS + ["ok", "一个中文句子", "a much longer sentence " * 20]
    assert np.allclose(embedder.embed(texts), torch_emb.embed(texts), atol=1e-4)


def test_onnx_export_is_cached_and_a_broken_entry_is_replaced(tmp_path):
    first = TransformersEmbedder(onnx_cache_dir=tmp_path)
    (entry,) = tmp_path.glob("*.onnx")
    stamp = entry.stat().st_mtime_ns
    again = TransformersEmbedder(onnx_cache_dir=tmp_path)  # loads the entry, no export
    assert entry.stat().st_mtime_ns == stamp
    assert np.allclose(again.embed(TEXTS), first.embed(TEXTS), atol=1e-5)
    entry.write_bytes(b"not a graph")
    repaired = TransformersEmbedder(onnx_cache_dir=tmp_path)
    assert repaired.runtime == "onnx" and entry.stat().st_size > 1_000_000
    assert np.allclose(repaired.embed(TEXTS), first.embed(TEXTS), atol=1e-5)


def test_onnx_works_when_the_cache_cannot_be_written(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    emb = TransformersEmbedder(onnx_cache_dir=blocker / "onnx")
    assert emb.runtime == "onnx" and emb.embed(TEXTS).shape == (3, 384)


def test_unknown_runtime_is_a_config_error():
    with pytest.raises(ModelConfigError, match="runtime"):
        TransformersEmbedder(runtime="tensorrt")
