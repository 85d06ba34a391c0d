"""Errors of the LLM adapters become task reasons, DLQ headers and log lines: they say
what was wrong with an answer, never what the model (or the server) said."""

from __future__ import annotations

from datetime import date

import pytest

from memstream.schemas.events import Message
from models.errors import ModelError
from models.llm.openai_compat import OpenAILLM

LEAK = "my card number is 4111-1111"
TURNS = [Message(role="user", content="I live in Porto", msg_id="u1")]

ANSWERS = {
    "prose, no JSON": [f"Sure! {LEAK}"] * 2,
    "JSON not an object": [f'["{LEAK}"]'] * 2,
    "broken JSON": ['{"facts": [' + f'"{LEAK}"'] * 2,
    "wrong shape": [{"facts": [{"text": LEAK, "source": "x"}]}] * 2,
    "source not a turn": [{"facts": [{"text": LEAK, "source": LEAK}]}] * 2,
}


def _llm(url: str) -> OpenAILLM:
    return OpenAILLM(url, model="m", api_key="k", timeout_s=5, max_retries=0, backoff_s=0)


@pytest.mark.parametrize("case", ANSWERS, ids=list(ANSWERS))
def test_unusable_answers_are_described_without_their_text(scripted, case: str) -> None:
    for answer in ANSWERS[case]:
        scripted.push_chat(answer)
    with pytest.raises(ModelError) as info:
        _llm(scripted.url).extract_facts(TURNS, None, None, date(2026, 1, 1))
    assert "4111" not in str(info.value) and "card" not in str(info.value), str(info.value)


@pytest.mark.parametrize(
    "body",
    [{"error": {"message": f"your prompt {LEAK} is too long", "type": "invalid_request"}}, LEAK],
    ids=["openai error body", "text body"],
)
def test_http_errors_keep_the_error_type_not_the_message(scripted, body) -> None:
    scripted.push(body, status=400)
    with pytest.raises(ModelError) as info:
        _llm(scripted.url).extract_facts(TURNS, None, None, date(2026, 1, 1))
    text = str(info.value)
    assert "HTTP 400" in text and "4111" not in text, text
    if isinstance(body, dict):
        assert "invalid_request" in text


def test_non_json_success_body_is_described_by_its_size(scripted) -> None:
    scripted.push(LEAK, status=200)
    scripted.push(LEAK, status=200)  # the re-ask
    with pytest.raises(ModelError) as info:
        _llm(scripted.url).extract_facts(TURNS, None, None, date(2026, 1, 1))
    assert "non-JSON" in str(info.value) and "4111" not in str(info.value)
