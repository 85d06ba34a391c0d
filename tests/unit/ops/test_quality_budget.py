"""Evidence recall at a context budget (issue 32), on hand-computed cases."""

from __future__ import annotations

import pytest

from ops.bench.quality.budget import BUDGETS, KEYS, budget_recall, budget_scores, fitting, top_chars
from ops.bench.quality.metrics import score, summarize

# results best first: their source ids and their texts (300, 150, 100, 600, 50 chars)
RANKED = [["x"], ["a", "b"], ["y"], ["c"], ["d"]]
CONTENTS = ["x" * 300, "a" * 150, "y" * 100, "c" * 600, "d" * 50]


@pytest.mark.parametrize(
    ("budget", "n"), [(100, 1), (300, 1), (449, 1), (450, 2), (550, 3), (1149, 3), (1150, 4)]
)
def test_whole_results_fit_in_rank_order(budget: int, n: int) -> None:
    assert fitting(CONTENTS, budget) == n


def test_the_first_result_always_counts_even_past_the_budget() -> None:
    assert fitting(["z" * 5000, "a"], 500) == 1
    assert budget_recall(["z"], [["z"], ["a"]], ["z" * 5000, "a"], 500) == 1.0


def test_a_result_that_does_not_fit_ends_the_list_no_shorter_one_skips_ahead() -> None:
    # 300 + 150 + 100 = 550 fit in 1000; the 600-char "c" does not, so "d" (50) after it
    # is not taken either: the ranking is kept
    assert budget_recall(["c", "d"], RANKED, CONTENTS, 1000) == 0.0
    assert budget_recall(["c", "d"], RANKED, CONTENTS, 1200) == 1.0


def test_evidence_is_covered_through_each_results_source_ids() -> None:
    assert budget_recall(["a", "b", "c"], RANKED, CONTENTS, 450) == pytest.approx(2 / 3)
    assert budget_recall(["b"], RANKED, CONTENTS, 300) == 0.0


def test_no_evidence_and_no_results_score_zero() -> None:
    assert budget_recall([], RANKED, CONTENTS, 500) == 0.0
    assert budget_recall(["a"], [], [], 500) == 0.0
    assert fitting([], 500) == 0


def test_budget_scores_carry_every_budget_and_the_top10_characters() -> None:
    out = budget_scores(["a", "c"], RANKED, CONTENTS)
    assert set(out) == set(KEYS) and BUDGETS == (500, 1000, 2000, 4000)
    assert out["chars@500"] == 0.5 and out["chars@1000"] == 0.5 and out["chars@2000"] == 1.0
    assert out["top10_chars"] == 1200.0 == top_chars(CONTENTS)
    assert top_chars(["ab"] * 12) == 20  # the top 10 only


def test_budget_scores_refuse_results_without_their_texts() -> None:
    with pytest.raises(ValueError, match="contents"):
        budget_scores(["a"], RANKED, CONTENTS[:2])


def test_score_adds_the_budget_figures_only_with_contents_and_summarize_averages_them() -> None:
    plain = score("single", ["a"], [], RANKED)
    assert not set(KEYS) & set(plain)
    rows = [("en", "single", score("single", ["a"], [], RANKED, CONTENTS)),
            ("en", "multi", score("multi", ["c"], [], RANKED, CONTENTS))]  # fmt: skip
    out = summarize(rows)
    assert out["overall"]["chars@500"] == 0.5  # "a" fits in 450, "c" does not
    assert out["overall"]["chars@2000"] == 1.0
    assert out["by_type"]["multi"]["top10_chars"] == 1200.0
