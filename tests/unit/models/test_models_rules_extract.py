"""The deterministic ``rules`` extractor, table-driven, English and Chinese."""

from __future__ import annotations

from datetime import date

import pytest

from memstream.schemas.enums import MemType, Ownership
from memstream.schemas.events import Message
from models.llm.rules import RulesLLM

TODAY = date(2026, 3, 2)  # a Monday


def extract(*turns: tuple[str, str], ownership: Ownership | None = Ownership.USER) -> list:
    messages = [
        Message(role=role, content=text, msg_id=f"m{i}") for i, (role, text) in enumerate(turns)
    ]
    return RulesLLM().extract_facts(messages, ownership, None, TODAY)


NOTHING = [
    "Hi.",
    "Hello there!",
    "What is the capital of France?",
    "Can you recommend a good restaurant?",
    "Thanks, I see.",
    "I'm fine, thank you!",
    "I don't know.",
    "Please tell me a joke.",
    "你好",
    "你好！",
    "谢谢，我知道了。",
    "你知道上海天气怎么样吗？",
    "请帮我订一张机票。",
    "我也是",
]


@pytest.mark.parametrize("text", NOTHING)
def test_greetings_questions_and_chit_chat_yield_nothing(text):
    assert extract(("user", text)) == []


# Issue 10 changed these: they carry content without a first-person fact, and the
# no-LLM mode keeps every such turn as one EPISODIC memory (telling general knowledge
# from a third-person statement needs understanding the rules lack). They still give
# no *rule fact*: nothing reads as a statement about the user.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("There are branches in trees.", "User said on 2026-03-02: There are branches in trees"),
        (
            "Water boils at 100 degrees Celsius.",
            "User said on 2026-03-02: Water boils at 100 degrees Celsius",
        ),
        ("地球绕着太阳转。", "用户在2026-03-02说：地球绕着太阳转"),
        # "i" and "my" inside a URL or an address are not the speaker
        (
            "See https://example.com/i/my and mail me@example.com.",
            "User said on 2026-03-02: See https://example.com/i/my and mail me@example.com",
        ),
    ],
)
def test_statements_without_a_first_person_fact_are_kept_as_the_turn(text, expected):
    (fact,) = extract(("user", text))
    assert fact.text == expected
    assert fact.mem_type is MemType.EPISODIC and fact.msg_id == "m0"


FACTS = [
    (
        "Hi, my name is John. I am a software engineer.",
        ["User's name is John", "User is a software engineer"],
    ),
    ("I'm moving to Shanghai next week", ["User is moving to Shanghai in the week of 2026-03-09"]),
    (
        "Hi, I am looking for a restaurant in San Francisco.",
        ["User is looking for a restaurant in San Francisco"],
    ),
    (
        "I really like spicy food, but I don't eat pork.",
        ["User really likes spicy food", "User doesn't eat pork"],
    ),
    ("I have a dentist appointment tomorrow.", ["User has a dentist appointment on 2026-03-03"]),
    ("I went hiking last Saturday.", ["User went hiking on Saturday, 2026-02-28"]),
    ("我叫李雷，我是一名医生。", ["用户叫李雷", "用户是一名医生"]),
    ("我下周要搬到上海", ["用户在2026-03-09那一周要搬到上海"]),
    ("你好，我对花生过敏。", ["用户对花生过敏"]),
    ("我明天去北京出差", ["用户2026-03-03去北京出差"]),
    ("请记住我对花生过敏。", ["用户对花生过敏"]),
    ("Please remember that I hate cilantro.", ["User hates cilantro"]),
    ("My wife and I are going to Japan.", ["User's wife and User are going to Japan"]),
    ("I have a dog and my wife has a cat.", ["User has a dog", "User's wife has a cat"]),
    (
        "I will be in Paris from June 3 to June 10.",
        ["User will be in Paris from 2026-06-03 to 2026-06-10"],
    ),
    ("I grew up in the U.S. and moved to Spain.", ["User grew up in the U.S. and moved to Spain"]),
]


@pytest.mark.parametrize(("text", "expected"), FACTS)
def test_first_person_statements_become_facts(text, expected):
    assert [f.text for f in extract(("user", text))] == expected


@pytest.mark.parametrize(
    ("text", "iso", "expire"),
    [
        ("I'm moving to Shanghai next week", "2026-03-09", date(2026, 3, 15)),
        ("我下周要搬到上海", "2026-03-09", date(2026, 3, 15)),
        ("I fly to Tokyo next Friday", "2026-03-13", date(2026, 3, 13)),
        ("我下周三有个面试", "2026-03-11", date(2026, 3, 11)),
        ("I will start my new job in two weeks", "2026-03-16", date(2026, 3, 22)),
        ("三天后我要考试", "2026-03-05", date(2026, 3, 5)),
    ],
)
def test_relative_dates_become_absolute_and_time_bound(text, iso, expire):
    (fact,) = extract(("user", text))
    assert iso in fact.text
    assert fact.time_bound and fact.expire_at == expire
    assert fact.mem_type is MemType.EPISODIC


def test_past_events_are_episodic_without_expiry():
    (fact,) = extract(("user", "I moved to Berlin two years ago"))
    assert "in 2024" in fact.text
    assert fact.mem_type is MemType.EPISODIC and not fact.time_bound and fact.expire_at is None


def test_birthdays_do_not_expire():
    (fact,) = extract(("user", "My birthday is on March 5th"))
    assert not fact.time_bound and fact.expire_at is None


def test_every_fact_keeps_its_source_msg_id():
    facts = extract(
        ("user", "Hi!"),
        ("assistant", "Hello, how can I help?"),
        ("user", "I am a nurse."),
        ("user", "我喜欢猫。"),
    )
    assert [(f.text, f.msg_id, f.msg_index) for f in facts] == [
        ("User is a nurse", "m2", 2),
        ("用户喜欢猫", "m3", 3),
    ]


def test_user_variant_ignores_assistant_and_system_turns():
    facts = extract(
        ("system", "I am a system prompt and my name is Bob."),
        ("assistant", "I'm Aria, your travel planner."),
        ("user", "I like tea."),
    )
    assert [f.text for f in facts] == ["User likes tea"]


def test_agent_variant_reads_only_assistant_turns():
    facts = extract(
        ("user", "I like tea."),
        ("assistant", "I'm Aria, your travel planner. I will remind you tomorrow."),
        ownership=Ownership.AGENT,
    )
    assert [f.text for f in facts] == [
        "Assistant is Aria, the user's travel planner",
        "Assistant will remind the user on 2026-03-03",
    ]


def test_generic_variant_reads_both_sides_but_never_system():
    facts = extract(
        ("system", "My name is Bob."),
        ("user", "I like tea."),
        ("assistant", "I'm Aria."),
        ownership=None,
    )
    assert [f.text for f in facts] == ["User likes tea", "Assistant is Aria"]


def test_repeated_statements_are_extracted_once():
    assert len(extract(("user", "I like tea."), ("user", "I like tea!"))) == 1


def test_habits_are_procedural():
    (fact,) = extract(("user", "I always drink coffee before work."))
    assert fact.mem_type is MemType.PROCEDURAL
