"""The OpenAI-compatible chat adapter, on the wire against a scripted local server."""

from __future__ import annotations

import socket
import time
from datetime import date

import httpx
import pytest

from memstream.schemas.enums import MemType, OpType, Ownership
from memstream.schemas.events import Message, Strategy
from models.degrade import decide_or_degrade
from models.errors import InventedId, LLMTimeout, LLMUnavailable, MalformedOutput
from models.llm.openai_compat import OpenAILLM

TODAY = date(2026, 3, 2)
CONVERSATION = [
    Message(role="system", content="SYSTEM-SECRET: you are a helpful bot", msg_id="s0"),
    Message(
        role="user", content="Hi, my name is John. I'm moving to Shanghai next week.", msg_id="u1"
    ),
    Message(role="assistant", content="ASSISTANT-SAYS: Nice to meet you, John!", msg_id="a2"),
]
FACTS = {
    "facts": [
        {"text": "Name is John", "source": 1, "mem_type": "SEMANTIC"},
        {
            "text": "Moving to Shanghai in the week of 2026-03-09",
            "source": 1,
            "mem_type": "EPISODIC",
            "time_bound": True,
            "expire_at": "2026-03-15",
        },
    ]
}


def make_llm(url: str, **kw) -> OpenAILLM:
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("max_retries", 1)
    return OpenAILLM(url, model="test-model", api_key="sk-test", backoff_s=0, **kw)


def test_extract_sends_today_hides_system_and_parses_facts(scripted):
    scripted.push_chat(FACTS)
    facts = make_llm(scripted.url).extract_facts(CONVERSATION, None, None, TODAY)

    req = scripted.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test"
    assert req["json"]["model"] == "test-model"
    assert req["json"]["response_format"] == {"type": "json_object"}
    sent = scripted.sent_text()
    assert "Today's date is 2026-03-02" in sent
    assert "SYSTEM-SECRET" not in sent
    assert "ASSISTANT-SAYS" in sent  # the generic variant reads both sides
    assert [f.text for f in facts] == [d["text"] for d in FACTS["facts"]]
    assert {f.msg_id for f in facts} == {"u1"} and {f.msg_index for f in facts} == {1}
    assert facts[1].mem_type is MemType.EPISODIC and facts[1].time_bound
    assert facts[1].expire_at == date(2026, 3, 15)


def test_user_variant_never_shows_assistant_turns(scripted):
    scripted.push_chat(FACTS)
    make_llm(scripted.url).extract_facts(CONVERSATION, Ownership.USER, None, TODAY)
    sent = scripted.sent_text()
    assert "moving to Shanghai" in sent
    assert "ASSISTANT-SAYS" not in sent and "SYSTEM-SECRET" not in sent


def test_agent_variant_only_shows_assistant_turns(scripted):
    scripted.push_chat({"facts": [{"text": "Greets users by name", "source": 2}]})
    facts = make_llm(scripted.url).extract_facts(CONVERSATION, Ownership.AGENT, None, TODAY)
    sent = scripted.sent_text()
    assert "ASSISTANT-SAYS" in sent and "moving to Shanghai" not in sent
    assert facts[0].msg_id == "a2"


def test_strategy_focus_reaches_the_prompt(scripted):
    scripted.push_chat({"facts": []})
    strategy = Strategy(focus="dietary restrictions", entity_types=["allergy"])
    assert make_llm(scripted.url).extract_facts(CONVERSATION, None, strategy, TODAY) == []
    assert "dietary restrictions" in scripted.sent_text() and "allergy" in scripted.sent_text()


def test_nothing_readable_makes_no_call(scripted):
    only_system = [Message(role="system", content="You are a bot.")]
    assert make_llm(scripted.url).extract_facts(only_system, None, None, TODAY) == []
    assert scripted.requests == []


def test_malformed_json_is_retried_once_with_the_mistake_shown(scripted):
    scripted.push_chat("Sure! Here are the facts: name is John")
    scripted.push_chat("```json\n" + '{"facts": [{"text": "Name is John", "source": 1}]}' + "\n```")
    facts = make_llm(scripted.url).extract_facts(CONVERSATION, None, None, TODAY)
    assert [f.text for f in facts] == ["Name is John"]
    assert len(scripted.requests) == 2
    retry = scripted.requests[1]["json"]["messages"]
    assert retry[-2]["role"] == "assistant" and "could not be used" in retry[-1]["content"]


def test_malformed_twice_raises_instead_of_returning_empty(scripted):
    scripted.push_chat("not json at all")
    scripted.push_chat('{"wrong": "shape"}')
    with pytest.raises(MalformedOutput):
        make_llm(scripted.url).extract_facts(CONVERSATION, None, None, TODAY)
    assert len(scripted.requests) == 2


def test_fact_traced_to_a_hidden_turn_is_malformed(scripted):
    bad = {"facts": [{"text": "Is a bot", "source": 0}]}  # turn 0 is the system message
    scripted.push_chat(bad)
    scripted.push_chat(bad)
    with pytest.raises(MalformedOutput):
        make_llm(scripted.url).extract_facts(CONVERSATION, None, None, TODAY)


def test_slow_answer_times_out_without_retry(scripted):
    scripted.push_chat(FACTS, delay=2.0)
    started = time.monotonic()
    with pytest.raises(LLMTimeout):
        make_llm(scripted.url, timeout_s=0.3).extract_facts(CONVERSATION, None, None, TODAY)
    assert time.monotonic() - started < 1.5
    assert len(scripted.requests) == 1


def test_server_errors_are_retried_then_raise_unavailable(scripted):
    scripted.push({"error": "boom"}, status=500)
    scripted.push({"error": "boom"}, status=502)
    with pytest.raises(LLMUnavailable) as info:
        make_llm(scripted.url, max_retries=1).extract_facts(CONVERSATION, None, None, TODAY)
    assert not isinstance(info.value, LLMTimeout)
    assert info.value.status_code == 502
    assert len(scripted.requests) == 2


def test_server_error_then_success(scripted):
    scripted.push({"error": "busy"}, status=503)
    scripted.push_chat(FACTS)
    facts = make_llm(scripted.url, max_retries=1).extract_facts(CONVERSATION, None, None, TODAY)
    assert len(facts) == 2


def test_client_error_is_not_retried(scripted):
    scripted.push({"error": "bad key"}, status=401)
    with pytest.raises(LLMUnavailable) as info:
        make_llm(scripted.url, max_retries=3).extract_facts(CONVERSATION, None, None, TODAY)
    assert info.value.status_code == 401 and len(scripted.requests) == 1


def test_connection_refused_is_unavailable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nobody listens
    with pytest.raises(LLMUnavailable):
        make_llm(f"http://127.0.0.1:{port}", max_retries=0).extract_facts(
            CONVERSATION, None, None, TODAY
        )


SIMILAR = [("mem-aaaa-1111", "Likes cheese pizza", 0.82), ("mem-bbbb-2222", "Name is John", 0.1)]


def test_decide_maps_small_ids_both_ways(scripted):
    scripted.push_chat(
        {
            "decisions": [
                {"event": "UPDATE", "id": "0", "text": "Likes cheese and chicken pizza"},
                {"event": "NONE", "id": 1},
            ]
        }
    )
    decisions = make_llm(scripted.url).decide("Likes chicken pizza", SIMILAR)
    sent = scripted.sent_text()
    assert "mem-aaaa-1111" not in sent and '"id": "0"' in sent
    assert "Likes chicken pizza" in sent
    assert [(d.op, d.target_id, d.text, d.old_text) for d in decisions] == [
        (OpType.UPDATE, "mem-aaaa-1111", "Likes cheese and chicken pizza", "Likes cheese pizza")
    ]


def test_decide_delete_always_comes_with_the_superseding_add(scripted):
    scripted.push_chat({"decisions": [{"event": "DELETE", "id": "1"}]})
    decisions = make_llm(scripted.url).decide("Name is Jack, not John", SIMILAR)
    assert [(d.op, d.target_id) for d in decisions] == [
        (OpType.DELETE, "mem-bbbb-2222"),
        (OpType.ADD, None),
    ]
    assert decisions[1].text == "Name is Jack, not John"


def test_decide_invented_id_is_rejected(scripted):
    invented = {"decisions": [{"event": "UPDATE", "id": "7", "text": "Likes pizza"}]}
    scripted.push_chat(invented)
    scripted.push_chat(invented)
    with pytest.raises(InventedId):
        make_llm(scripted.url).decide("Likes chicken pizza", SIMILAR)
    assert len(scripted.requests) == 2


def test_decide_without_candidates_adds_without_a_call(scripted):
    decisions = make_llm(scripted.url).decide("Plays guitar", [])
    assert [(d.op, d.text) for d in decisions] == [(OpType.ADD, "Plays guitar")]
    assert scripted.requests == []


def test_degrade_to_append_when_the_llm_is_down(scripted):
    scripted.push({"error": "down"}, status=500)
    scripted.push({"error": "down"}, status=500)
    result = decide_or_degrade(make_llm(scripted.url), "Likes chicken pizza", SIMILAR)
    assert result.degraded and "LLMUnavailable" in (result.reason or "")
    assert [(d.op, d.text) for d in result.decisions] == [(OpType.ADD, "Likes chicken pizza")]


def test_decide_or_degrade_passes_good_decisions_through(scripted):
    scripted.push_chat({"decisions": [{"event": "NONE", "id": "0"}]})
    result = decide_or_degrade(make_llm(scripted.url), "Loves cheese pizza", SIMILAR)
    assert not result.degraded and result.reason is None
    assert [(d.op, d.target_id) for d in result.decisions] == [(OpType.NONE, "mem-aaaa-1111")]


def test_injected_httpx_client_is_used():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        content = '{"facts": []}'
        return httpx.Response(200, json={"choices": [{"message": {"content": content}}]})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    llm = OpenAILLM("http://llm.invalid/v1", model="m", client=client)
    assert llm.extract_facts(CONVERSATION, Ownership.USER, None, TODAY) == []
    assert seen == ["/v1/chat/completions"]
