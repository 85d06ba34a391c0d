"""Over-fetch size, channel fusion, relevance threshold and final scores."""

from __future__ import annotations

import pytest

from core.ranking import (
    Candidate,
    dense_relevance,
    final_score,
    fuse,
    overfetch_for,
    overfetch_size,
    rank,
    rank_with,
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


def test_dense_cosine_maps_to_unit_interval():
    assert dense_relevance(-0.4) == 0.0
    assert dense_relevance(0.42) == 0.42
    assert dense_relevance(1.0000001) == 1.0
    assert dense_relevance(None) == 0.0


def test_fusion_takes_the_stronger_channel():
    assert fuse(0.42, 0.9) == 0.9
    assert fuse(0.42, None) == 0.42
    assert fuse(None, 1.0) == 1.0
    assert fuse(0.42, 0.9, lexical_weight=0.5) == pytest.approx(0.45)
    assert fuse(-0.2, 0.1) == pytest.approx(0.1)  # two weak signals stay weak


def test_final_score_is_07_relevance_plus_03_weight():
    assert final_score(0.8, 0.5, 0.7) == pytest.approx(0.71)


def test_rank_filters_scores_and_orders():
    cands = [
        Candidate("A", weight_now=0.5, dense=0.8),  # 0.7·0.8 + 0.3·0.5 = 0.71
        Candidate("B", weight_now=0.9, dense=0.6),  # 0.42 + 0.27 = 0.69
        Candidate("C", weight_now=1.0, dense=0.29, lexical=0.2),  # relevance 0.29: dropped
        Candidate("D", weight_now=0.1, dense=0.05, lexical=1.0),  # 0.70 + 0.03 = 0.73
        Candidate("E", weight_now=0.8, dense=-0.7),  # relevance 0: dropped
    ]
    out = rank(cands, 10, min_relevance=0.3, relevance_weight=0.7)
    assert [r.memory_id for r in out] == ["D", "A", "B"]
    assert [r.score for r in out] == pytest.approx([0.73, 0.71, 0.69])
    assert [r.relevance for r in out] == pytest.approx([1.0, 0.8, 0.6])
    assert [r.memory_id for r in rank(cands, 2, min_relevance=0.3, relevance_weight=0.7)] == [
        "D",
        "A",
    ]


def test_exact_lexical_name_hit_passes_the_threshold_without_the_dense_channel():
    out = rank(
        [Candidate("zh", weight_now=0.6, lexical=1.0)], 5, min_relevance=0.3, relevance_weight=0.7
    )
    assert [r.memory_id for r in out] == ["zh"]
    assert out[0].score == pytest.approx(0.7 + 0.18)


def test_relevance_exactly_at_the_threshold_is_kept():
    out = rank(
        [Candidate("x", weight_now=0.0, dense=0.3)], 5, min_relevance=0.3, relevance_weight=0.7
    )
    assert len(out) == 1 and out[0].score == pytest.approx(0.21)


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
    assert out[0].relevance == pytest.approx(0.6)
    assert out[0].score == pytest.approx(0.7 * 0.6 + 0.3 * 0.4)


def test_rank_with_uses_settings_and_a_request_override():
    cands = [Candidate("a", weight_now=0.5, dense=0.35), Candidate("b", weight_now=0.5, dense=0.5)]
    assert [r.memory_id for r in rank_with(cands, 10, S)] == ["b", "a"]
    assert [r.memory_id for r in rank_with(cands, 10, S, min_relevance=0.4)] == ["b"]
