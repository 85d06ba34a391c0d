"""Tokenizer (Latin and CJK) and the per-user BM25 index, with hand-computed scores."""

from __future__ import annotations

import logging
import random
import time

import pytest

from core.lexical import BM25Index, _stem, stem, tokenize


def test_latin_text_is_lowercased_split_on_non_word_characters_and_stemmed():
    assert tokenize("Alice works at ACME since 2021; she's 30.") == [
        "alic", "work", "acm", "sinc", "2021", "30",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("allergic", "allergy"),
        ("allergies", "allergic"),
        ("moved", "moving"),
        ("moves", "move"),
        ("travelling", "travel"),
        ("peanuts", "peanut"),
        ("lived", "lives"),
        ("happiness", "happy"),
    ],
)
def test_english_word_forms_share_one_term(a, b):
    assert stem(a) == stem(b)
    assert tokenize(f"I am {a}") == tokenize(f"{b.upper()}")


def test_a_stem_match_scores_like_the_same_word():
    idx = BM25Index()
    idx.add("nuts", "I am allergic to peanuts.")
    idx.add("bike", "Priya moved to Lisbon and rides a bike")
    assert idx.normalized("peanut allergy") == {"nuts": 1.0}
    assert set(idx.normalized("moving")) == {"bike"}


@pytest.mark.parametrize(
    "name", ["Alice", "Hannah", "Lima", "Osaka", "Reykjavik", "Kenji", "Luna", "Priya", "Zoe"]
)
def test_a_name_matches_however_it_is_typed_and_keeps_its_letters(name):
    (term,) = tokenize(name)
    assert tokenize(name.lower()) == tokenize(f"{name}'s") == [term]
    assert name.lower().startswith(term) and len(term) >= len(name) - 1
    idx = BM25Index()
    idx.add("m", f"{name} called on Sunday")
    idx.add("o", "Someone else called on Monday")
    assert idx.normalized(name.lower()) == {"m": 1.0}


def test_distinct_names_stay_distinct_terms():
    names = "Ana Anna Sam Samuel Leo Leon Mei Maya Omar Oscar Rosa Ravi Raj Jonas Lena".split()
    assert len({stem(n.lower()) for n in names}) == len(names)


def test_numbers_short_words_and_non_english_letters_are_not_stemmed():
    assert [stem(w) for w in ("2021", "a1b2", "gas", "café", "zürich")] == [
        "2021", "a1b2", "gas", "café", "zürich",
    ]  # fmt: skip


def test_only_words_that_are_stemmed_enter_the_memo():
    # numbers and ids are new words all the time: remembered, they would fill the memo
    # (65,536 entries) with nothing a lookup saves, as bench soak's numbered sentences did
    _stem.cache_clear()
    for word in ("20261203", "a1b2c3", "gas", "zürich", "allergies", "allergies"):
        stem(word)
    info = _stem.cache_info()
    assert (info.currsize, info.hits) == (1, 1)


def test_full_width_input_is_folded():
    assert tokenize("ＡＢＣ１２３") == ["abc123"]


def test_chinese_is_segmented_with_jieba():
    assert tokenize("李四的生日是几号") == ["李四", "生日", "几号"]
    assert tokenize("我喜欢Python和机器学习") == ["喜欢", "python", "机器", "学习"]


def test_long_cjk_words_also_yield_bigrams_so_names_match_either_cut():
    assert "张三" in tokenize("张三在哪里工作")
    assert "小明" in tokenize("王小明住在北京")


def test_jieba_logger_is_quiet():
    tokenize("中文")
    assert logging.getLogger("jieba").getEffectiveLevel() >= logging.WARNING


def _two_docs() -> BM25Index:
    idx = BM25Index(k1=1.2, b=0.75)
    idx.add("d1", "apple banana")
    idx.add("d2", "apple cherry cherry")
    return idx


def test_bm25_scores_match_the_formula():
    # N=2, avgdl=2.5; idf(apple)=ln 1.2, idf(banana)=idf(cherry)=ln 2.
    idx = _two_docs()
    raw = idx.scores("cherry")
    # ln2·2·2.2 / (2 + 1.2·(0.25 + 0.75·3/2.5)) = 0.902321
    assert raw == {"d2": pytest.approx(0.902321, abs=1e-6)}
    raw = idx.scores("apple banana")
    # d1: ln1.2·2.2/2.02 + ln2·2.2/2.02 = 0.198568 + 0.754913
    assert raw["d1"] == pytest.approx(0.953481, abs=1e-6)
    # d2: ln1.2·2.2/(1 + 1.2·1.15) = 0.168532
    assert raw["d2"] == pytest.approx(0.168532, abs=1e-6)


def test_normalized_score_is_idf_weighted_query_coverage():
    idx = _two_docs()
    norm = idx.normalized("apple banana")
    assert norm["d1"] == 1.0  # every term present (clamped from 1.089)
    assert norm["d2"] == pytest.approx(0.168532 / 0.875469, abs=1e-5)  # 0.1925
    assert idx.normalized("durian") == {}


def test_search_orders_best_first_and_limits():
    idx = _two_docs()
    assert [d for d, _ in idx.search("apple banana")] == ["d1", "d2"]
    assert [d for d, _ in idx.search("apple banana", limit=1)] == ["d1"]


def test_add_replaces_and_remove_forgets():
    idx = _two_docs()
    idx.add("d1", "durian")
    assert set(idx.scores("banana")) == set()
    assert set(idx.scores("durian")) == {"d1"}
    assert idx.remove("d1") is True
    assert idx.remove("d1") is False
    assert len(idx) == 1 and "d2" in idx and "d1" not in idx
    assert idx.scores("durian") == {}
    idx.remove("d2")
    assert len(idx) == 0 and idx.scores("apple") == {}


def test_chinese_name_query_finds_its_memory_above_min_relevance():
    idx = BM25Index()
    idx.add("a", "张三在腾讯工作")
    idx.add("b", "张三喜欢吃寿司")
    idx.add("c", "王小明住在北京")
    idx.add("d", "The user likes green tea")
    assert idx.search("张三在哪里工作")[0][0] == "a"
    assert idx.search("张三喜欢什么")[0] == ("b", 1.0)
    top, score = idx.search("小明在哪里住")[0]
    assert top == "c" and score >= 0.3
    assert idx.search("张三")[0][1] == 1.0
    assert "d" not in idx.normalized("张三")


def test_english_name_query_scores_full_coverage():
    idx = BM25Index()
    idx.add("a", "Alice works at ACME")
    idx.add("b", "Bob likes tea")
    assert idx.search("who is Alice?") == [("a", 1.0)]


def test_query_on_2000_docs_is_well_under_a_millisecond():
    rnd = random.Random(7)
    vocab = [f"w{i}" for i in range(5000)]
    common = vocab[:300]
    idx = BM25Index()
    for i in range(2000):
        idx.add_tokens(
            f"m{i}", [rnd.choice(common if rnd.random() < 0.3 else vocab) for _ in range(15)]
        )
    queries = [[rnd.choice(common if j % 2 else vocab) for j in range(6)] for _ in range(200)]
    start = time.perf_counter()
    for q in queries:
        idx.normalized(q)
    per_query_ms = (time.perf_counter() - start) * 1000 / len(queries)
    assert per_query_ms < 1.0
