"""The profile's LLM summary (docs/architecture.md#the-profile): the prompt (pure), the
OpenAI-compatible adapter on the wire of the scripted server, and ``summary_or_plan``,
which keeps the plan whenever the answer is not grounded or the model fails."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from core.profile import ProfileItem
from models.errors import MalformedOutput
from models.llm.openai_compat import OpenAILLM
from models.llm.rules import RulesLLM
from models.profile_summary import summary_or_plan
from models.prompts import profile_summary

PLANNED = [
    ProfileItem("Priya works as a nurse in Leeds", ("m1",), ("t1",), "Priya"),
    ProfileItem("Priya is a night-shift nurse", ("m2", "m3"), ("t2", "t1"), "Priya"),
    ProfileItem("Priya went to a pottery class on 2023-05-07", ("m4",), ("t4",)),
]
GOOD = {
    "items": [
        {"text": "Priya is a night-shift nurse in Leeds", "sources": [1, 2]},
        {"text": "Priya went to pottery on 2023-05-07", "sources": [3]},
    ]
}
INVENTED = {"items": [{"text": "Priya is a nurse in Manchester", "sources": [1, 2]}]}


def make_llm(url: str) -> OpenAILLM:
    return OpenAILLM(url, model="m", api_key="sk", timeout_s=5.0, max_retries=0, backoff_s=0)


def degraded() -> float:
    value = REGISTRY.get_sample_value("memstream_llm_degraded_total", {"task": "profile"})
    return value or 0.0


def test_the_prompt_numbers_the_items_in_order_and_names_the_budget():
    ctx = profile_summary.build_context([p.text for p in PLANNED], 300)
    messages = profile_summary.to_messages(ctx)
    user = messages[-1]["content"]
    assert "1. Priya works as a nurse in Leeds\n2. Priya is a night-shift nurse\n3. " in user
    assert "300 characters" in user and "300 characters" in messages[0]["content"]
    assert "Never add a name, number, date" in messages[0]["content"]
    assert profile_summary.build_context(["用户住在深圳", "用户喝龙井"], 100).language == "zh"
    assert profile_summary.VERSION == "profile_summary/v1"


def test_statements_cite_indices_from_zero_and_a_refused_answer_raises():
    ctx = profile_summary.build_context([p.text for p in PLANNED], 300)
    assert profile_summary.to_statements(GOOD, ctx) == [
        ("Priya is a night-shift nurse in Leeds", [0, 1]),
        ("Priya went to pottery on 2023-05-07", [2]),
    ]
    with pytest.raises(MalformedOutput, match="do not hold"):
        profile_summary.to_statements(INVENTED, ctx)
    with pytest.raises(MalformedOutput, match="do not exist"):  # shown from 1: 0 is none
        profile_summary.to_statements({"items": [{"text": "Priya", "sources": [0]}]}, ctx)
    with pytest.raises(MalformedOutput, match="budget is 20"):
        profile_summary.to_statements(GOOD, profile_summary.build_context(ctx.items, 20))


def test_a_grounded_answer_on_the_wire_becomes_the_profile(scripted):
    scripted.push_chat(GOOD)
    items, how = summary_or_plan(make_llm(scripted.url), PLANNED, 200)
    assert how == "summarized by openai:m"
    assert items == [
        ProfileItem("Priya is a night-shift nurse in Leeds", ("m1", "m2", "m3"), ("t1", "t2"), "Priya"),
        ProfileItem("Priya went to pottery on 2023-05-07", ("m4",), ("t4",)),
    ]  # fmt: skip
    assert len(scripted.requests) == 1
    assert all(p.text in scripted.sent_text(0) for p in PLANNED)


def test_an_invented_answer_is_asked_again_once_then_the_plan_is_used(scripted):
    before = degraded()
    scripted.push_chat(INVENTED)
    scripted.push_chat(INVENTED)
    items, how = summary_or_plan(make_llm(scripted.url), PLANNED, 200)
    assert items == PLANNED
    assert how.startswith("plan, MalformedOutput: ") and "Manchester" not in how
    assert len(scripted.requests) == 2  # the re-ask told the model what was wrong
    assert "could not be used: statement 1 states" in scripted.sent_text(1)
    assert degraded() == before + 1


def test_a_second_answer_that_is_grounded_is_used(scripted):
    scripted.push_chat("no JSON here")
    scripted.push_chat(GOOD)
    items, how = summary_or_plan(make_llm(scripted.url), PLANNED, 200)
    assert how == "summarized by openai:m" and len(items) == 2


def test_a_model_error_keeps_the_plan(scripted):
    before = degraded()
    scripted.push({"error": "overloaded"}, status=503)
    items, how = summary_or_plan(make_llm(scripted.url), PLANNED, 200)
    assert items == PLANNED and how.startswith("plan, LLMUnavailable: ")
    assert degraded() == before + 1


def test_an_answer_from_any_provider_is_checked_again():
    class Inventive(RulesLLM):  # a provider without the prompt's own check
        def summarize_profile(self, items, max_chars):
            return [("Priya is a nurse in Leeds since 2019", [0])]

    items, how = summary_or_plan(Inventive(), PLANNED, 200)
    assert items == PLANNED and how.startswith("plan, summary refused: statement 1 states")


def test_rules_answer_with_the_plan_which_is_no_degradation(scripted):
    before = degraded()
    assert RulesLLM().summarize_profile(["a", "b"], 10) == [("a", [0]), ("b", [1])]
    assert summary_or_plan(RulesLLM(), PLANNED, 200) == (PLANNED, "plan")
    assert degraded() == before
    # one item or none: nothing to join, no call
    assert summary_or_plan(make_llm(scripted.url), PLANNED[:1], 200) == (PLANNED[:1], "plan")
    assert summary_or_plan(make_llm(scripted.url), [], 200) == ([], "plan")
    assert scripted.requests == []
