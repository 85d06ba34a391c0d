"""Who and when in the rules extractor: named speakers, "you", dates of each turn."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from memstream.schemas.enums import MemType, Ownership
from memstream.schemas.events import Message
from models.llm.rules import RulesLLM
from models.rules.speakers import conversation_names, message_day, voices

CLOCK = date(2026, 3, 2)  # what the clock would say: must never leak into 2023 turns
SAID = datetime(2023, 5, 10, 9, 30, tzinfo=UTC)  # a Wednesday


def said(role: str, text: str, name: str | None = None, ts: datetime | None = SAID) -> Message:
    return Message(role=role, content=text, name=name, ts=ts)


def texts(*messages: Message, ownership: Ownership | None = None) -> list[str]:
    return [f.text for f in RulesLLM().extract_facts(list(messages), ownership, None, CLOCK)]


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("Priya", "I went to the dentist yesterday.", "Priya went to the dentist on 2023-05-09"),
        (
            "Priya",
            "I fly to Tokyo next Friday.",
            "Priya flies to Tokyo on Friday, 2023-05-19",
        ),
        ("王芳", "我上周三开始学陶艺", "王芳2023-05-03开始学陶艺"),
        ("王芳", "我明天下午去上海出差", "王芳2023-05-11下午去上海出差"),
        (None, "I went to the dentist yesterday.", "User went to the dentist on 2023-05-09"),
        (None, "我明天下午去上海出差", "用户2023-05-11下午去上海出差"),
    ],
)
def test_a_named_speaker_is_the_subject_and_dates_resolve_against_the_turn(name, text, expected):
    assert texts(said("user", text, name)) == [expected]


def test_a_plan_expires_after_its_day_counted_from_the_turn():
    (fact,) = RulesLLM().extract_facts(
        [said("user", "I fly to Tokyo next Friday.", "Priya")], Ownership.USER, None, CLOCK
    )
    assert fact.time_bound and fact.expire_at == date(2023, 5, 19)
    assert fact.mem_type is MemType.EPISODIC


def test_a_turn_without_ts_falls_back_to_today():
    assert texts(said("user", "I went hiking yesterday.", "Priya", ts=None)) == [
        "Priya went hiking on 2026-03-01"
    ]


def test_each_turn_uses_its_own_date():
    later = SAID + timedelta(days=30)
    assert texts(
        said("user", "I went hiking yesterday.", "Priya"),
        said("user", "I went swimming yesterday.", "Priya", ts=later),
    ) == ["Priya went hiking on 2023-05-09", "Priya went swimming on 2023-06-08"]


def test_the_date_of_a_turn_is_its_utc_date():
    east = datetime(2023, 5, 11, 1, 0, tzinfo=timezone(timedelta(hours=8)))  # 05-10 in UTC
    assert message_day(said("user", "x", ts=east), CLOCK) == date(2023, 5, 10)
    naive = datetime(2023, 5, 10, 23, 0)
    assert message_day(said("user", "x", ts=naive), CLOCK) == date(2023, 5, 10)
    assert message_day(said("user", "x", ts=None), CLOCK) == CLOCK


def test_you_is_the_other_named_speaker():
    assert texts(
        said("user", "I live in Lisbon.", "Priya"),
        said("assistant", "I'll pick you up next Friday.", "Tomás"),
        said("user", "我明天下午给你打电话", "Priya"),
    ) == [
        "Priya lives in Lisbon",
        "Tomás will pick Priya up on Friday, 2023-05-19",
        "Priya2023-05-11下午给Tomás打电话",
    ]


def test_you_without_another_named_speaker_is_the_other_role():
    assert texts(said("assistant", "I will remind you tomorrow.", "Aria")) == [
        "Aria will remind the user on 2023-05-11"
    ]
    assert texts(said("user", "我明天给你打电话", "王芳")) == ["王芳2023-05-11给助手打电话"]


def test_the_nearest_other_speaker_is_you_earlier_first_on_a_tie():
    messages = [
        said("user", "a", "Ana"),
        said("user", "b", "Leo"),
        said("user", "c", "Mia"),
        said("user", "d", "Leo"),
    ]
    assert [v.you_en for v in voices(messages)] == ["Leo", "Ana", "Leo", "Mia"]
    assert [v.me_en for v in voices(messages)] == ["Ana", "Leo", "Mia", "Leo"]
    assert conversation_names(messages) == ("Ana", "Leo", "Mia")


def test_two_named_users_are_told_apart():
    assert texts(
        said("user", "I live in Lisbon.", "Priya"),
        said("user", "I live in Porto.", "Tomás"),
        ownership=Ownership.USER,
    ) == ["Priya lives in Lisbon", "Tomás lives in Porto"]


def test_a_blank_name_is_no_name():
    assert texts(said("user", "I live in Lisbon.", " ")) == ["User lives in Lisbon"]
