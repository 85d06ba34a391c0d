"""Prompt modules are pure functions: context in, messages out; answers mapped back."""

from __future__ import annotations

import copy
from datetime import UTC, date, datetime, timedelta

import pytest

from memstream.schemas.enums import OpType, Ownership
from memstream.schemas.events import Message
from memstream.schemas.facts import Similar
from models.errors import InventedId, MalformedOutput
from models.llm.base import parse_json_object
from models.prompts import decide, extract_facts

TODAY = date(2026, 3, 2)
MESSAGES = [
    Message(role="system", content="SYSTEM-ONLY"),
    Message(role="user", content="我叫李雷，我是一名医生。", msg_id="u1"),
    Message(role="assistant", content="很高兴认识你！", msg_id="a2"),
]


def system_text(ownership: Ownership | None) -> str:
    ctx = extract_facts.build_context(MESSAGES, ownership, None, TODAY)
    return extract_facts.to_messages(ctx)[0]["content"]


def test_extraction_prompt_has_role_categories_date_and_negative_examples():
    text = system_text(Ownership.USER)
    assert "Personal Information Organizer" in text
    for category in (
        "Personal preferences",
        "Important personal details",
        "Plans and intentions",
        "Activity and service preferences",
        "Health and wellness",
        "Professional details",
        "Miscellaneous",
    ):
        assert category in text
    assert "Today's date is 2026-03-02" in text
    assert 'Input:\n[0] user: Hi.\nOutput: {"facts": []}' in text
    assert 'There are branches in trees.\nOutput: {"facts": []}' in text
    assert "Never extract anything from system messages" in text
    assert "write the facts in Chinese" in text  # the input is Chinese


def test_three_variants_show_different_turns():
    def shown(ownership):
        ctx = extract_facts.build_context(MESSAGES, ownership, None, TODAY)
        return extract_facts.to_messages(ctx)[1]["content"]

    assert "[1] user" in shown(None) and "[2] assistant" in shown(None)
    assert "[1] user" in shown(Ownership.USER) and "assistant:" not in shown(Ownership.USER)
    assert "[2] assistant" in shown(Ownership.AGENT) and "[1] user" not in shown(Ownership.AGENT)
    assert all("SYSTEM-ONLY" not in shown(o) for o in (None, Ownership.USER, Ownership.AGENT))
    assert "only the assistant's turns" in system_text(Ownership.AGENT)


SAID = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)
NAMED = [
    Message(role="system", content="SYSTEM-ONLY"),
    Message(role="user", name="Priya", content="I started a pottery class yesterday!", ts=SAID),
    Message(role="assistant", name="Tomás", content="Cool!"),
    Message(role="user", content="Same here.", ts=SAID + timedelta(days=2)),
]


def test_turns_show_the_speaker_name_and_date():
    ctx = extract_facts.build_context(NAMED, None, None, date(2023, 5, 10))
    system, user = (m["content"] for m in extract_facts.to_messages(ctx))
    assert user == (
        "Today's date is 2023-05-10.\n\nConversation:\n"
        "[1] user (Priya, 2023-05-08): I started a pottery class yesterday!\n"
        "[2] assistant (Tomás): Cool!\n"
        "[3] user (2023-05-10): Same here.\n\n"
        "Return the JSON object."
    )
    assert "Today's date is 2023-05-10" in system
    assert "with their name as the subject" in system
    assert "Resolve a relative date against the date of the turn" in system
    assert "[0] user (Priya, 2023-05-08): I started a pottery class yesterday!" in system
    assert '"Priya started a pottery class on 2023-05-07"' in system
    assert extract_facts.VERSION == "extract_facts/v3"


def test_prompt_functions_are_pure():
    """Same inputs, same output; other inputs, other output; inputs untouched; no clock."""
    messages = list(NAMED)
    before = [m.model_copy(deep=True) for m in messages]
    long_ago = date(2001, 2, 3)
    ctx = extract_facts.build_context(messages, None, None, long_ago)
    snapshot = copy.deepcopy(ctx)
    first = extract_facts.to_messages(ctx)

    # a different context in between leaves no trace (no hidden state)
    other = extract_facts.build_context(MESSAGES, Ownership.USER, None, TODAY)
    other_out = extract_facts.to_messages(other)
    assert other_out != first
    assert extract_facts.to_messages(ctx) == first
    assert messages == before and ctx == snapshot  # nothing mutated

    # the output depends on each input: the date, the turns, the names, the ownership
    later = extract_facts.build_context(messages, None, None, date(2001, 2, 4))
    assert extract_facts.to_messages(later) != first
    renamed = [m.model_copy(update={"name": "Ana"}) if m.name == "Priya" else m for m in messages]
    renamed_out = extract_facts.to_messages(
        extract_facts.build_context(renamed, None, None, long_ago)
    )
    assert "[1] user (Ana, 2023-05-08)" in renamed_out[1]["content"]
    assert renamed_out != first

    # the only "today" in the prompt is the given one, never the machine's clock
    text = first[0]["content"] + first[1]["content"]
    assert "Today's date is 2001-02-03" in first[1]["content"]
    assert date.today().isoformat() not in text
    assert datetime.now(UTC).date().isoformat() not in text

    # the decision prompt too: ids mapped from the inputs alone, inputs untouched
    similar = [Similar("uuid-a", "Likes cheese pizza", 0.9)]
    held = list(similar)
    d1 = decide.to_messages(decide.build_context("Likes chicken pizza", similar))
    d2 = decide.to_messages(decide.build_context("Likes tea", similar))
    assert d1 != d2 and similar == held
    assert d1 == decide.to_messages(decide.build_context("Likes chicken pizza", similar))
    assert decide.VERSION


def test_extracted_plain_strings_are_accepted_for_a_single_turn():
    ctx = extract_facts.build_context(MESSAGES, Ownership.USER, None, TODAY)
    facts = extract_facts.to_facts({"facts": ["名字是李雷", "是一名医生"]}, ctx, MESSAGES)
    assert [(f.text, f.msg_id) for f in facts] == [("名字是李雷", "u1"), ("是一名医生", "u1")]


def test_decision_prompt_maps_ids_and_states_the_rules():
    ctx = decide.build_context(
        "Likes chicken pizza",
        [
            Similar("uuid-a", "Likes cheese pizza", 0.9),
            Similar("uuid-b", "Name is John", 0.2),
            Similar("uuid-a", "duplicate candidate", 0.9),
        ],
    )
    assert ctx.real_ids == {"0": "uuid-a", "1": "uuid-b"}
    system, user = (m["content"] for m in decide.to_messages(ctx))
    assert "Never invent an id" in system
    assert "Likes cheese and chicken pizza" in system  # UPDATE merges
    assert "Same meaning in other words is NONE" in system
    assert "uuid-a" not in user and '"id": "0"' in user


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            {"decisions": [{"event": "add", "id": None, "text": "Likes chicken pizza"}]},
            [(OpType.ADD, None)],
        ),
        (
            {"decisions": [{"event": "NONE", "id": "0"}, {"event": "NONE", "id": "1"}]},
            [(OpType.NONE, "uuid-a")],
        ),
        (
            {
                "decisions": [
                    {"event": "NONE", "id": "1"},
                    {"event": "UPDATE", "id": 0, "text": "Likes cheese and chicken pizza"},
                ]
            },
            [(OpType.UPDATE, "uuid-a")],
        ),
    ],
)
def test_decisions_are_mapped_back_and_tidied(answer, expected):
    ctx = decide.build_context(
        "Likes chicken pizza",
        [Similar("uuid-a", "Likes cheese pizza"), Similar("uuid-b", "Name is John")],
    )
    got = decide.to_decisions(answer, ctx)
    assert [(d.op, d.target_id) for d in got] == expected


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"decisions": [{"event": "DELETE", "id": "5"}]}, InventedId),
        # the real ids are never valid in an answer: only the small ones shown
        ({"decisions": [{"event": "NONE", "id": "uuid-a"}]}, InventedId),
        ({"decisions": [{"event": "UPDATE", "id": "0"}]}, MalformedOutput),  # no merged text
        ({"decisions": []}, MalformedOutput),
        (
            {
                "decisions": [
                    {"event": "UPDATE", "id": "0", "text": "a"},
                    {"event": "DELETE", "id": "0"},
                ]
            },
            MalformedOutput,
        ),
    ],
)
def test_bad_decisions_are_rejected(answer, error):
    ctx = decide.build_context("x", [Similar("uuid-a", "Likes cheese pizza")])
    with pytest.raises(error):
        decide.to_decisions(answer, ctx)


@pytest.mark.parametrize(
    "raw",
    [
        '{"facts": []}',
        '```json\n{"facts": []}\n```',
        '<think>the user said hi</think>\n{"facts": []}',
        'Here you go: {"facts": []} Hope it helps!',
    ],
)
def test_json_object_is_found_in_common_wrappings(raw):
    assert parse_json_object(raw) == {"facts": []}


@pytest.mark.parametrize("raw", ["", "no json", "[1, 2]", "{broken"])
def test_non_objects_are_malformed(raw):
    with pytest.raises(MalformedOutput):
        parse_json_object(raw)
