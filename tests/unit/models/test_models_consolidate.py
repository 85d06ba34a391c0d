"""``summarize`` for consolidation: the prompt (pure), the LLM on the wire, the rules' compression."""

from __future__ import annotations

import pytest

from models.errors import MalformedOutput
from models.llm.openai_compat import OpenAILLM
from models.llm.rules import RulesLLM
from models.prompts import consolidate

MEMBERS = [
    "Priya went to a pottery class on 2023-05-07",
    "Priya went to a pottery class on 2023-05-14",
    "Priya went to a pottery class on 2023-05-21",
]


def make_llm(url: str) -> OpenAILLM:
    return OpenAILLM(url, model="m", api_key="sk", timeout_s=5.0, max_retries=1, backoff_s=0)


def test_the_prompt_lists_the_members_in_order_and_names_the_bound():
    ctx = consolidate.build_context([" a ", "", "b"], 300)
    assert ctx.memories == ("a", "b") and ctx.language == "en"
    messages = consolidate.to_messages(consolidate.build_context(MEMBERS, 300))
    user = messages[-1]["content"]
    assert [user.index(m) for m in MEMBERS] == sorted(user.index(m) for m in MEMBERS)
    assert "300 characters" in user and "300 characters" in messages[0]["content"]
    assert "Keep every name, number, date" in messages[0]["content"]
    assert consolidate.build_context(["用户喜欢喝绿茶", "用户每天喝龙井"], 100).language == "zh"
    assert consolidate.VERSION


def test_to_summary_refuses_one_over_the_bound_and_an_empty_one():
    ctx = consolidate.build_context(MEMBERS, 20)
    assert consolidate.to_summary({"summary": "x" * 20}, ctx) == "x" * 20
    with pytest.raises(MalformedOutput, match="50 chars, the bound is 20"):
        consolidate.to_summary({"summary": "x" * 50}, ctx)  # never clipped: values lost
    with pytest.raises(MalformedOutput):
        consolidate.to_summary({"summary": "   "}, ctx)


def test_an_llm_summarizes_on_the_wire_and_is_asked_again_once(scripted):
    scripted.push_chat("not json at all")
    scripted.push_chat({"summary": "Priya went to pottery on 2023-05-07, 05-14 and 05-21"})
    text = make_llm(scripted.url).summarize(MEMBERS, 200)
    assert text == "Priya went to pottery on 2023-05-07, 05-14 and 05-21"
    assert len(scripted.requests) == 2
    assert all(m in scripted.sent_text(0) for m in MEMBERS)


def test_one_member_needs_no_call(scripted):
    assert make_llm(scripted.url).summarize(["Priya made a vase."], 200) == "Priya made a vase"
    assert scripted.requests == []


def test_rules_compress_the_same_frame_and_refuse_what_is_merely_related():
    merged = "Priya went to a pottery class on 2023-05-07, 2023-05-14 and 2023-05-21"
    assert RulesLLM().summarize(MEMBERS, 320) == merged
    assert RulesLLM().summarize(["用户去过深圳出差", "用户去过广州出差"], 320) == (
        "用户去过深圳和广州出差"
    )
    with pytest.raises(MalformedOutput, match="not merged"):
        RulesLLM().summarize(MEMBERS, 40)  # the list does not fit: no clipped text
    related = ["Priya started a pottery class", "Priya made a blue vase"]
    with pytest.raises(MalformedOutput, match="not merged"):
        RulesLLM().summarize(related, 320)  # related is not the same: never joined
    assert RulesLLM().summarize(["Priya made a vase"], 320) == "Priya made a vase"
