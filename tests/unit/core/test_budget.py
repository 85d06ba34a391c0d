"""The context-budget cut of recall's ``max_chars`` (core.ranking.within_budget)."""

from __future__ import annotations

from core.ranking import within_budget


def test_rank_order_is_kept_and_only_whole_memories_count() -> None:
    texts = ["a" * 300, "b" * 250, "c" * 150, "d" * 40]
    kept, used = within_budget(texts, 500)
    assert kept == [0, 2, 3] and used == 490  # the 250 no longer fits; shorter ones still do


def test_nothing_fits_a_budget_below_every_memory() -> None:
    assert within_budget(["x" * 80, "y" * 90], 50) == ([], 0)


def test_an_exact_fit_is_kept() -> None:
    assert within_budget(["ab", "cde"], 5) == ([0, 1], 5)


def test_characters_are_code_points_for_chinese_too() -> None:
    kept, used = within_budget(["我喜欢喝绿茶", "我住在杭州西湖边"], 10)
    assert kept == [0] and used == 6


def test_empty() -> None:
    assert within_budget([], 100) == ([], 0)
