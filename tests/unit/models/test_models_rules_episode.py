"""The no-LLM fallback: a content turn with no rule fact is one EPISODIC memory."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memstream.schemas.enums import MemType, Ownership
from memstream.schemas.events import Message
from models.llm.rules import RulesLLM
from models.rules.episode import MAX_EPISODE, bounded

CLOCK = date(2026, 3, 2)
SAID = datetime(2023, 5, 8, 20, 0, tzinfo=UTC)  # a Monday


def facts(*turns: tuple[str, str | None, str], ownership: Ownership | None = None) -> list:
    messages = [
        Message(role=role, name=name, content=text, ts=SAID, msg_id=f"m{i}")
        for i, (role, name, text) in enumerate(turns)
    ]
    return RulesLLM().extract_facts(messages, ownership, None, CLOCK)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "Priya",
            "Wow, cool! That pottery class last night was amazing!",
            "Priya said on 2023-05-08: That pottery class on the night of 2023-05-07 was amazing",
        ),
        (
            "Tomás",
            "Haha yes. Our new puppy keeps chewing the shoes",
            "Tomás said on 2023-05-08: Our new puppy keeps chewing the shoes",
        ),
        (
            None,
            "Good morning! The kids start school next Monday. Can you believe it?",
            "User said on 2023-05-08: The kids start school on Monday, 2023-05-15",
        ),
        ("王芳", "哈哈，公司下个月要搬到杭州！", "王芳在2023-05-08说：公司2023年6月要搬到杭州"),
        (None, "好的。下周三开会", "用户在2023-05-08说：2023-05-17开会"),
    ],
)
def test_a_content_turn_without_a_rule_fact_is_kept_as_one_episode(name, text, expected):
    (fact,) = facts(("user", name, text))
    assert fact.text == expected
    assert fact.mem_type is MemType.EPISODIC
    assert fact.msg_id == "m0" and fact.msg_index == 0


def test_you_in_an_episode_is_the_other_speaker():
    got = facts(
        ("user", "Priya", "I started a pottery class yesterday!"),
        ("assistant", "Tomás", "Nice! You should show the pots to Ana on Saturday."),
    )
    assert [f.text for f in got] == [
        "Priya started a pottery class on 2023-05-07",
        "Tomás said on 2023-05-08: Priya should show the pots to Ana on Saturday, 2023-05-13",
    ]


def test_an_episode_keeps_the_date_hints():
    (fact,) = facts(("user", "Priya", "The marathon in Boston is on May 20."))
    assert fact.text == "Priya said on 2023-05-08: The marathon in Boston is on 2023-05-20"
    assert fact.time_bound and fact.expire_at == date(2023, 5, 20)
    (past,) = facts(("user", "Priya", "That concert last night was loud."))
    assert not past.time_bound and past.expire_at is None


def test_chit_chat_and_questions_leave_nothing():
    assert (
        facts(
            ("user", "Priya", "Good morning!"),
            ("assistant", "Tomás", "Wow, cool!"),
            ("user", "Priya", "How are you?"),
            ("assistant", "Tomás", "哈哈太棒了"),
            ("user", "Priya", "Thanks so much, Tomás!"),
        )
        == []
    )


def test_the_content_beside_a_rule_fact_is_kept_as_an_episode():
    got = facts(("user", "Priya", "I live in Lisbon. The weather is lovely there."))
    assert [f.text for f in got] == [
        "Priya lives in Lisbon",
        "Priya said on 2023-05-08: The weather is lovely there",
    ]
    assert [f.mem_type for f in got] == [MemType.SEMANTIC, MemType.EPISODIC]


def test_no_episode_when_every_clause_gave_a_rule_fact():
    got = facts(("user", "Priya", "I live in Lisbon and I work as a nurse."))
    assert [f.text for f in got] == ["Priya lives in Lisbon", "Priya works as a nurse"]


def test_the_ownership_variant_still_decides_which_turns_are_read():
    turns = (
        ("user", "Priya", "The party is on Saturday."),
        ("assistant", "Tomás", "The cake is chocolate."),
    )
    assert [f.msg_id for f in facts(*turns, ownership=Ownership.USER)] == ["m0"]
    assert [f.msg_id for f in facts(*turns, ownership=Ownership.AGENT)] == ["m1"]


def test_a_long_turn_is_bounded():
    text = "The trip went through " + ", ".join(f"town{i:03d}" for i in range(200)) + "."
    (fact,) = facts(("user", "Priya", text))
    assert len(fact.text) <= MAX_EPISODE and fact.text.endswith("…")
    assert fact.text.startswith("Priya said on 2023-05-08: The trip went through town000")


def test_bounded_cuts_at_a_word():
    assert bounded("short", 10) == "short"
    assert bounded("one two three four", 12) == "one two…"
    assert len(bounded("杭州" * 50, 20)) == 20


def test_a_turn_whose_facts_were_all_said_before_keeps_its_other_content():
    got = facts(
        ("user", "Priya", "Started Severance, I'm hooked"),
        ("user", "Priya", "Finally started Past Lives, I'm hooked"),
        ("user", "Priya", "I'm hooked!"),
    )
    assert [(f.msg_id, f.text) for f in got] == [
        ("m0", "Priya is hooked"),
        ("m0", "Priya said on 2023-05-08: Started Severance"),
        ("m1", "Priya said on 2023-05-08: Finally started Past Lives"),
    ]


def test_a_first_person_reaction_is_not_a_fact():
    assert facts(("user", "Priya", "I miss you, Tomás!"), ("user", "Priya", "我去忙啦")) == []
