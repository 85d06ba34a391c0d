"""An LLM's consolidation summary is used only when it is a compression
(docs/architecture.md#consolidation-and-paged-out-memories)."""

from __future__ import annotations

from dataflows.ingest.consolidate import summary_refusal

TOWNS = [f"User visited Zorvath{k:03d} and loved its bakery" for k in (1, 2, 3)]


def test_a_short_summary_keeping_every_value_is_accepted():
    assert summary_refusal("User visited Zorvath001, Zorvath002 and Zorvath003", TOWNS, 320) is None


def test_a_summary_that_loses_a_value_is_refused():
    why = summary_refusal("User visited three towns and loved their bakeries", TOWNS, 320)
    assert why == "lost zorvath001, zorvath002, zorvath003"


def test_a_summary_over_the_bound_or_no_shorter_is_refused():
    assert "bound 30" in summary_refusal(
        "User visited Zorvath001, Zorvath002, Zorvath003", TOWNS, 30
    )
    joined = "; ".join(TOWNS)  # a join keeps every value but compresses nothing
    assert summary_refusal(joined, TOWNS, 320).startswith(f"{len(joined)} chars")
