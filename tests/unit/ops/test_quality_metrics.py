"""The scores of `bench quality`, on hand-computed cases."""

from __future__ import annotations

import pytest

from ops.bench.quality.metrics import (
    first_rank,
    first_ranks,
    kept_share,
    paired,
    ratios,
    recall_at,
    recalled_chars,
    score,
    summarize,
)

# results best first; each result lists its source msg_ids
RANKED = [["x"], ["a"], ["y", "b"], ["z"], ["w"], ["c"]]


@pytest.mark.parametrize(
    ("k", "expected"), [(1, 0.0), (2, 1 / 3), (3, 2 / 3), (5, 2 / 3), (6, 1.0), (10, 1.0)]
)
def test_recall_at_k_counts_evidence_in_the_top_k(k: int, expected: float) -> None:
    assert recall_at(["a", "b", "c"], RANKED, k) == pytest.approx(expected)


def test_a_consolidated_result_counts_every_source_it_carries() -> None:
    assert recall_at(["a", "b"], [["a", "q", "b"], ["x"]], 1) == 1.0
    assert recall_at(["a", "a"], [["a"]], 1) == 1.0  # evidence is a set
    assert recall_at([], RANKED, 10) == 0.0


def test_first_rank() -> None:
    assert first_rank(["b", "c"], RANKED) == 2
    assert first_rank(["nope"], RANKED) is None


def test_score_of_a_plain_question() -> None:
    got = score("single", ["a", "c"], [], RANKED)
    assert got == {"recall@1": 0.0, "recall@5": 0.5, "recall@10": 1.0, "hit@10": 1.0}
    assert score("single", ["q"], [], RANKED)["hit@10"] == 0.0
    # only the top 10 count
    assert score("multi", ["late"], [], [["x"]] * 10 + [["late"]])["recall@10"] == 0.0


def test_changed_wants_the_current_value_first_and_no_stale_one_above_it() -> None:
    first = score("changed", ["new"], ["old"], [["new"], ["old"]])
    assert (first["latest@1"], first["stale_above"]) == (1.0, 0.0)
    below = score("changed", ["new"], ["old"], [["old"], ["x"], ["new"]])
    assert (below["latest@1"], below["stale_above"], below["recall@5"]) == (0.0, 1.0, 1.0)
    missing = score("changed", ["new"], ["old"], [["x"], ["old"]])
    assert (missing["latest@1"], missing["stale_above"]) == (0.0, 1.0)
    merged = score("changed", ["new"], ["old"], [["x"], ["old", "new"]])  # same rank
    assert (merged["latest@1"], merged["stale_above"]) == (0.0, 0.0)


def test_deleted_scores_only_the_leak() -> None:
    assert score("deleted", ["gone"], [], [["x"], ["gone", "y"]]) == {"leak": 1.0}
    assert score("deleted", ["gone"], [], [["x"]] * 10 + [["gone"]]) == {"leak": 0.0}


def test_summarize_by_type_language_and_overall_without_deleted() -> None:
    rows = [
        ("en", "single", score("single", ["a"], [], [["a"]])),
        ("zh", "single", score("single", ["a"], [], [["b"]])),
        ("zh", "changed", score("changed", ["n"], ["o"], [["o"], ["n"]])),
        ("en", "deleted", score("deleted", ["a"], [], [["a"]])),
    ]
    got = summarize(rows)
    assert got["overall"] == {"n": 3, "hit@10": 0.6667, "recall@1": 0.3333,
                              "recall@10": 0.6667, "recall@5": 0.6667}  # fmt: skip
    assert got["by_type"]["single"]["recall@1"] == 0.5
    assert got["by_type"]["changed"]["stale_above"] == 1.0
    assert got["by_type"]["deleted"] == {"n": 1, "leak": 1.0}
    assert got["by_lang"]["en"]["overall"]["n"] == 1
    assert got["by_lang"]["zh"]["by_type"]["changed"]["latest@1"] == 0.0


def test_ratios_keep_the_nesting_and_refuse_a_zero_baseline() -> None:
    ours = {"overall": {"n": 4, "recall@10": 0.6, "hit@10": 0.8}, "extra": 1.0}
    base = {"overall": {"n": 4, "recall@10": 0.3, "hit@10": 0.0}}
    assert ratios(ours, base) == {"overall": {"recall@10": 2.0, "hit@10": None}}


def test_kept_share_splits_content_and_chit_chat() -> None:
    labels = {"c1": True, "c2": True, "c3": True, "c4": True, "h1": False, "h2": False}
    assert kept_share(labels, {"c1", "c2", "c3", "h2", "other"}) == {"content": 0.75, "chit": 0.5}
    assert kept_share({"c1": True}, set()) == {"content": 0.0, "chit": None}


def test_recalled_chars_is_the_mean_length_of_the_top_10_together() -> None:
    assert recalled_chars([["abc", "de"], ["x" * 10] * 12]) == pytest.approx((5 + 100) / 2)
    assert recalled_chars([]) == 0.0


def test_first_ranks_tells_where_each_system_put_the_evidence() -> None:
    from ops.bench.quality.data import Question

    q = Question("q1", 1, "en", "single", "where?", ("a",))
    got = first_ranks([q], {"ours": {"q1": [["x"], ["a"]]}, "base": {"q1": [["x"]] * 10 + [["a"]]}})
    assert got == [{"qid": "q1", "lang": "en", "type": "single", "query": "where?",
                    "evidence": ["a"], "stale": [], "ours": 1, "base": None}]  # fmt: skip


def test_paired_counts_questions_won_lost_and_tied_per_language() -> None:
    from types import SimpleNamespace as Q

    questions = [
        Q(qid="1", lang="en", type="single", evidence=("a",)),
        Q(qid="2", lang="en", type="single", evidence=("b",)),
        Q(qid="3", lang="zh", type="multi", evidence=("c", "d")),
        Q(qid="4", lang="zh", type="deleted", evidence=("e",)),  # left out
        Q(qid="5", lang="zh", type="single", evidence=("f",)),  # theirs never answered
    ]
    ours = {"1": [["a"]], "2": [["x"]], "3": [["c"]], "4": [], "5": [["f"]]}
    theirs = {"1": [["x"]], "2": [["x"]], "3": [["c"], ["d"]], "4": [["e"]]}
    assert paired(questions, ours, theirs) == {
        "all": {"better": 1, "worse": 1, "same": 1},
        "en": {"better": 1, "worse": 0, "same": 1},
        "zh": {"better": 0, "worse": 1, "same": 0},
    }
