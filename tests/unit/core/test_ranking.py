"""Over-fetch size, channel fusion, relevance threshold and final scores (hand-computed)."""

from __future__ import annotations

import pytest

from core.ranking import (
    Candidate,
    final_score,
    fuse,
    overfetch_for,
    overfetch_size,
    rank,
    rank_with,
    reciprocal_ranks,
)
from core.settings import Settings

S = Settings.model_construct()


@pytest.mark.parametrize(("top_k", "expected"), [(1, 60), (10, 60), (15, 60), (16, 64), (50, 200)])
def test_overfetch_is_four_times_top_k_but_at_least_60(top_k, expected):
    assert overfetch_size(top_k, 4, 60) == expected
    assert overfetch_for(top_k, S) == expected


def test_overfetch_refuses_top_k_zero():
    with pytest.raises(ValueError):
        overfetch_size(0, 4, 60)


def test_hybrid_fusion_is_the_or_of_dense_and_squared_lexical():
    assert fuse(0.6, 0.5) == pytest.approx(0.7)  # q = 0.25: 0.6 + 0.25 − 0.15
    assert fuse(0.3, 0.2) == pytest.approx(0.328)  # q = 0.04: 0.3 + 0.04 − 0.012
    assert fuse(0.42, None) == pytest.approx(0.42)  # dense alone keeps its value
    assert fuse(None, 1.0) == 1.0  # a full lexical match (an exact name) alone is 1
    assert fuse(None, 0.5) == pytest.approx(0.25)  # half the query's words: a quarter
    assert fuse(1.0, 1.0) == 1.0 and fuse(0.0, 0.0) == 0.0
    assert fuse(None, None) == 0.0
    assert fuse(1.2, -0.1) == 1.0  # out-of-range inputs are clamped first


def test_hybrid_is_never_below_the_dense_channel_and_rewards_agreement():
    for d in (0.0, 0.1, 0.3, 0.55, 0.9, 1.0):
        for lex in (0.0, 0.2, 0.3, 0.7, 1.0):
            assert fuse(d, lex) >= max(d, lex * lex) - 1e-12
    # a memory both channels find beats the dense channel alone at the same dense value
    assert fuse(0.6, 0.7) == pytest.approx(0.796) and fuse(0.6, 0.7) > fuse(0.75, None)


def test_single_channel_modes_ignore_the_other_channel():
    assert fuse(0.6, 0.5, "dense") == 0.6
    assert fuse(0.6, 0.5, "lexical") == 0.5
    assert fuse(None, 0.9, "dense") == 0.0
    with pytest.raises(ValueError):
        fuse(0.1, 0.1, "max")  # type: ignore[arg-type]


def test_final_score_is_07_relevance_plus_03_weight():
    assert final_score(0.8, 0.5, 0.7) == pytest.approx(0.71)


def test_rank_filters_then_orders_by_normalized_relevance_and_weight():
    cands = [
        Candidate("A", weight_now=0.5, dense=0.8),  # relevance 0.8
        Candidate("B", weight_now=0.9, dense=0.6),  # 0.6
        Candidate("C", weight_now=1.0, dense=0.12),  # dropped
        Candidate("D", weight_now=0.1, dense=1.0),
        Candidate("E", weight_now=0.8, dense=0.0),  # relevance 0: dropped
        Candidate("F", weight_now=0.2, dense=0.328),
    ]
    out = rank(cands, 10, min_relevance=0.3, relevance_weight=0.7, fusion="dense")
    # kept relevance spans 0.328..1.0: normalized (r − 0.328) / 0.672
    norm = {"D": 1.0, "A": (0.8 - 0.328) / 0.672, "B": (0.6 - 0.328) / 0.672, "F": 0.0}
    weight = {"D": 0.1, "A": 0.5, "B": 0.9, "F": 0.2}
    assert [r.memory_id for r in out] == ["D", "A", "B", "F"]
    assert [r.score for r in out] == pytest.approx(
        [0.7 * norm[m] + 0.3 * weight[m] for m in "DABF"]
    )
    assert [r.relevance for r in out] == pytest.approx([1.0, 0.8, 0.6, 0.328])  # calibrated
    assert [
        r.memory_id for r in rank(cands, 2, min_relevance=0.3, relevance_weight=0.7, fusion="dense")
    ] == [
        "D",
        "A",
    ]


def test_weight_separates_only_near_ties_once_relevance_is_normalized():
    # calibrated relevance bunched at the top (one user's memories): 0.95 vs 0.90;
    # raw, 0.3·weight (0.8 vs 0.6) would put the semantic memory first
    cands = [
        Candidate("episodic_answer", weight_now=0.6, dense=0.95),
        Candidate("semantic_other", weight_now=0.8, dense=0.90),
        Candidate("floor", weight_now=0.8, dense=0.60),
    ]
    out = rank(cands, 10, min_relevance=0.3, relevance_weight=0.7)
    assert [r.memory_id for r in out] == ["episodic_answer", "semantic_other", "floor"]
    assert final_score(0.95, 0.6, 0.7) < final_score(0.90, 0.8, 0.7)  # what the raw mix did


def test_depth_anchors_the_scale_so_extras_below_it_change_no_score_above():
    top = [
        Candidate("a", weight_now=0.5, dense=0.9),
        Candidate("b", weight_now=0.9, dense=0.85),
        Candidate("c", weight_now=0.5, dense=0.8),
    ]
    extras = [Candidate(f"x{i}", weight_now=1.0, dense=0.31) for i in range(3)]
    # depth 3: normalized between 0.9 (a) and 0.8 (c); b 0.5; the extras below c: 0
    out = rank(top + extras, 10, min_relevance=0.3, relevance_weight=0.7, fusion="dense", depth=3)
    scores = {r.memory_id: r.score for r in out}
    assert scores == pytest.approx(
        {"a": 0.7 + 0.15, "b": 0.35 + 0.27, "c": 0.15, "x0": 0.3, "x1": 0.3, "x2": 0.3}
    )
    alone = rank(top, 10, min_relevance=0.3, relevance_weight=0.7, fusion="dense", depth=3)
    assert {r.memory_id: r.score for r in alone} == pytest.approx({m: scores[m] for m in "abc"})
    # min-max over the whole union (no depth): 0.31..0.9 squeezes a and b (b at 0.915),
    # and b's weight puts it above the more relevant a
    squeezed = rank(top + extras, 10, min_relevance=0.3, relevance_weight=0.7, fusion="dense")
    assert [r.memory_id for r in squeezed][:2] == ["b", "a"]


def test_rank_with_normalizes_to_the_overfetch_depth():
    cands = [Candidate(f"m{i:02d}", weight_now=0.5, dense=1.0 - i / 100) for i in range(80)]
    dense = Settings.model_construct(recall_fusion="dense")
    out = rank_with(cands, 10, dense)  # depth max(4 x 10, 60) = 60: m59 is the zero
    assert out[0].score == pytest.approx(0.7 + 0.15)
    assert out[9].score == pytest.approx(0.7 * (1 - 9 / 59) + 0.15)


def test_exact_lexical_name_hit_passes_the_threshold_without_the_dense_channel():
    out = rank(
        [Candidate("zh", weight_now=0.6, lexical=1.0)], 5, min_relevance=0.3, relevance_weight=0.7
    )
    assert [r.memory_id for r in out] == ["zh"]
    assert out[0].score == pytest.approx(0.7 + 0.18)  # alone: normalized relevance 1


def test_relevance_exactly_at_the_threshold_is_kept():
    out = rank(
        [Candidate("x", weight_now=0.0, dense=0.3)], 5, min_relevance=0.3, relevance_weight=0.7
    )
    assert len(out) == 1 and out[0].relevance == pytest.approx(0.3)


def test_ties_are_broken_by_memory_id():
    cands = [Candidate(mid, weight_now=0.5, dense=0.5) for mid in ("m3", "m1", "m2")]
    out = rank(cands, 10, min_relevance=0.3, relevance_weight=0.7)
    assert [r.memory_id for r in out] == ["m1", "m2", "m3"]


def test_a_memory_offered_by_both_channels_is_merged():
    cands = [
        Candidate("x", weight_now=0.4, dense=0.35),
        Candidate("x", weight_now=0.4, lexical=0.6),
    ]
    out = rank(cands, 10, min_relevance=0.3, relevance_weight=0.7)
    assert len(out) == 1
    assert out[0].relevance == pytest.approx(0.584)  # 0.35 + 0.36 − 0.126
    assert out[0].score == pytest.approx(0.7 * 1.0 + 0.3 * 0.4)


def test_agreement_of_both_channels_outranks_one_strong_channel():
    cands = [
        Candidate("both", weight_now=0.6, dense=0.6, lexical=0.7),  # 0.796
        Candidate("dense", weight_now=0.6, dense=0.75),
        Candidate("lexical", weight_now=0.6, lexical=0.7),  # 0.49
    ]
    out = rank(cands, 10, min_relevance=0.3, relevance_weight=0.7)
    assert [r.memory_id for r in out] == ["both", "dense", "lexical"]
    out = rank(cands, 10, min_relevance=0.3, relevance_weight=0.7, fusion="dense")
    assert [r.memory_id for r in out] == ["dense", "both"]


def test_rank_with_uses_settings_and_a_request_override():
    cands = [Candidate("a", weight_now=0.5, dense=0.35), Candidate("b", weight_now=0.5, dense=0.5)]
    assert [r.memory_id for r in rank_with(cands, 10, S)] == ["b", "a"]
    assert [r.memory_id for r in rank_with(cands, 10, S, min_relevance=0.4)] == ["b"]


def test_rank_with_takes_the_fusion_mode_from_settings():
    cands = [Candidate("a", weight_now=0.5, dense=0.6, lexical=0.1)]
    lexical = Settings.model_construct(recall_fusion="lexical")
    assert rank_with(cands, 10, lexical) == []  # 0.1 < 0.3
    (hit,) = rank_with(cands, 10, S)
    assert hit.relevance == pytest.approx(0.604)  # 0.6 + 0.01 − 0.006


def test_reciprocal_ranks_count_each_channel_from_1_and_ties_share_the_best_rank():
    cands = [
        Candidate("a", 0.5, dense=0.9),
        Candidate("b", 0.5, dense=0.8, lexical=0.1),
        Candidate("c", 0.5, dense=0.8, lexical=0.1),  # ties b on both channels
        Candidate("d", 0.5, lexical=0.4),  # no dense score: the lexical channel only
    ]
    rr = reciprocal_ranks(cands, k=60)
    assert rr == pytest.approx(
        {"a": 1 / 61, "b": 1 / 62 + 1 / 62, "c": 1 / 62 + 1 / 62, "d": 1 / 61}
    )


def test_hybrid_order_hears_the_lexical_channel_when_every_coverage_is_tiny():
    # issue 32: a long dialogue as the query covers ~5 % of its words in the best
    # memory, so l² adds ~0.0025 and the relevance order is the dense one; the BM25
    # order still told the answer apart, and hybrid's order now takes half of it from
    # the channels' ranks (dense rank 2 + lexical rank 1, even dense rank 3 + lexical
    # rank 2, beat dense rank 1 alone)
    cands = [
        Candidate("chat", 0.6, dense=0.62),
        Candidate("answer", 0.6, dense=0.60, lexical=0.05),
        Candidate("other", 0.6, dense=0.58, lexical=0.01),
        *[Candidate(f"f{i}", 0.6, dense=0.4) for i in range(3)],
    ]
    out = rank(cands, 3, min_relevance=0.3, relevance_weight=0.7, depth=60)
    assert [r.memory_id for r in out] == ["answer", "other", "chat"]
    assert out[0].relevance == pytest.approx(0.60 + 0.0025 - 0.60 * 0.0025)  # still fused
    dense = rank(cands, 3, min_relevance=0.3, relevance_weight=0.7, fusion="dense", depth=60)
    assert [r.memory_id for r in dense] == ["chat", "answer", "other"]


def test_hybrid_with_one_channel_keeps_that_channel_s_order_and_the_threshold():
    cands = [Candidate(f"m{i}", 0.5, dense=0.9 - i / 10) for i in range(8)]  # 0.9 .. 0.2
    out = rank(cands, 10, min_relevance=0.3, relevance_weight=0.7)
    assert [r.memory_id for r in out] == [f"m{i}" for i in range(7)]  # m7 (0.2) dropped
    assert out[0].score == pytest.approx(0.7 + 0.15) and out[-1].score == pytest.approx(0.15)
