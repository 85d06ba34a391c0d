"""Evolution without an LLM: similarity thresholds and the degrade path
(docs/architecture.md#dedup-and-evolution)."""

from __future__ import annotations

from memstream.schemas.enums import OpType
from memstream.schemas.facts import Fact, Similar
from models.degrade import decide_or_degrade
from models.llm.base import LLM
from models.llm.rules import RulesLLM


def test_near_duplicate_is_none_against_the_closest_memory():
    decisions = RulesLLM(0.95).decide(
        "User loves cheese pizza",
        [("m1", "User likes pizza", 0.96), ("m2", "User likes cheese pizza", 0.98)],
    )
    assert [(d.op, d.target_id) for d in decisions] == [(OpType.NONE, "m2")]


def test_below_threshold_is_add():
    decisions = RulesLLM(0.95).decide(
        "User likes chicken pizza", [Similar("m1", "User likes cheese pizza", 0.9)]
    )
    assert [(d.op, d.text) for d in decisions] == [(OpType.ADD, "User likes chicken pizza")]


def test_same_normalized_text_is_none_without_a_score():
    decisions = RulesLLM().decide(
        Fact(text="User  likes TEA", msg_index=0), [("m9", "user likes tea")]
    )
    assert [(d.op, d.target_id) for d in decisions] == [(OpType.NONE, "m9")]


def test_threshold_comes_from_settings_value():
    similar = [("m1", "User likes tea", 0.93)]
    assert RulesLLM(0.92).decide("User enjoys tea", similar)[0].op is OpType.NONE
    assert RulesLLM(0.95).decide("User enjoys tea", similar)[0].op is OpType.ADD


def test_no_candidates_is_add():
    assert RulesLLM().decide("User plays guitar", [])[0].op is OpType.ADD


def test_rules_never_degrade():
    result = decide_or_degrade(RulesLLM(), "User plays guitar", [("m1", "User sings", 0.4)])
    assert not result.degraded and result.decisions[0].op is OpType.ADD


class _Broken(LLM):
    """An LLM whose provider fails with a non-model error must not be swallowed."""

    name = "broken"

    def extract_facts(self, messages, ownership, strategy, today):
        raise AssertionError("not used")

    def decide(self, new_fact, similar):
        raise RuntimeError("a bug, not an outage")


def test_degrade_only_catches_model_errors():
    import pytest

    with pytest.raises(RuntimeError):
        decide_or_degrade(_Broken(), "x", [("m1", "y", 0.1)])


def test_facts_that_differ_in_a_name_are_two_facts_however_close_their_cosine():
    new = "User once visited the town of Zorvath017 and loved its bakery"
    similar = [("m1", "User once visited the town of Zorvath003 and loved its bakery", 0.99)]
    assert RulesLLM(0.95).decide(new, similar)[0].op is OpType.ADD


def test_a_near_duplicate_with_the_same_specifics_is_none():
    new = "Priya really loves the bakery in Zorvath003"
    similar = [("m1", "Priya loves the bakery in Zorvath003", 0.97)]
    assert [(d.op, d.target_id) for d in RulesLLM(0.95).decide(new, similar)] == [
        (OpType.NONE, "m1")
    ]


def test_the_closest_candidate_with_other_specifics_is_passed_over_for_a_matching_one():
    similar = [("m1", "Tomás lives in Lisbon", 0.99), ("m2", "Priya lives in Lisbon now", 0.96)]
    decisions = RulesLLM(0.95).decide("Priya lives in Lisbon", similar)
    assert [(d.op, d.target_id) for d in decisions] == [(OpType.NONE, "m2")]
