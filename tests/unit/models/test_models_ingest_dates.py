"""The extraction step dates every message and gives the model the conversation's date."""

from __future__ import annotations

from datetime import UTC, date, datetime

from dataflows.ingest.extract import conversation_date, extract
from dataflows.ingest.items import Incoming, Source, TurnBatch
from memstream.schemas.events import ConversationEvent, Message
from models.llm.rules import RulesLLM

CLOCK = date(2026, 3, 2)
EVENT_TS = datetime(2023, 5, 8, 12, 0, tzinfo=UTC)
OWN_TS = datetime(2023, 5, 10, 9, 0, tzinfo=UTC)


class Recording(RulesLLM):
    """The rules provider, remembering what the step handed it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[list[Message], date]] = []

    def extract_facts(self, messages, ownership, strategy, today):
        self.calls.append((list(messages), today))
        return super().extract_facts(messages, ownership, strategy, today)


def incoming(*messages: Message, ts: datetime | None = EVENT_TS, n: int = 0) -> Incoming:
    event = ConversationEvent(user_id=7, messages=list(messages), ts=ts)
    return Incoming(event, f"t{n}", Source("memory.conversations", 0, n, None, None))


def run(*events: Incoming) -> tuple[Recording, list]:
    llm = Recording()
    out = extract(llm, TurnBatch(list(events), []), today_fn=lambda: CLOCK)
    return llm, [f.fact for f in out.facts]


def test_a_message_without_ts_takes_its_events_ts():
    llm, facts = run(
        incoming(
            Message(role="user", name="Priya", content="I went hiking yesterday."),
            Message(role="user", name="Priya", content="I went swimming yesterday.", ts=OWN_TS),
        )
    )
    (messages, today) = llm.calls[0]
    assert [m.ts for m in messages] == [EVENT_TS, OWN_TS]
    assert today == date(2023, 5, 10)  # the conversation's date: its latest message
    assert [f.text for f in facts] == [
        "Priya went hiking on 2023-05-07",
        "Priya went swimming on 2023-05-09",
    ]


def test_each_event_dates_its_own_messages():
    later = datetime(2023, 6, 1, tzinfo=UTC)
    llm, facts = run(
        incoming(Message(role="user", content="I went hiking yesterday."), n=0),
        incoming(Message(role="user", content="I went sailing yesterday."), ts=later, n=1),
    )
    assert [m.ts for m in llm.calls[0][0]] == [EVENT_TS, later]
    assert llm.calls[0][1] == date(2023, 6, 1)
    assert [f.text for f in facts] == [
        "User went hiking on 2023-05-07",
        "User went sailing on 2023-05-31",
    ]


def test_without_any_ts_today_is_the_clock():
    llm, facts = run(incoming(Message(role="user", content="I went hiking yesterday."), ts=None))
    assert llm.calls[0][0][0].ts is None and llm.calls[0][1] == CLOCK
    assert [f.text for f in facts] == ["User went hiking on 2026-03-01"]


def test_the_conversation_date_is_the_latest_utc_day():
    msgs = [Message(role="user", content="x", ts=t) for t in (OWN_TS, EVENT_TS)]
    assert conversation_date(msgs, lambda: CLOCK) == date(2023, 5, 10)
    assert conversation_date([Message(role="user", content="x")], lambda: CLOCK) == CLOCK
