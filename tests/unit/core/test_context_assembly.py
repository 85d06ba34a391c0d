"""The context call's assembly (core.context; docs/architecture.md#the-context-call): the
sections and their lines, the budget kept whole by priority, nothing said twice, the
entities' summaries, and the query made from the last turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.context import (
    ENTITY_MAX_CHARS,
    EntityNote,
    assemble,
    render,
    turn_query,
)
from core.profile import plan_profile
from memstream.schemas.enums import Level, MemType, Ownership
from memstream.schemas.memory import EntityLink, MemoryRecord

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
_n = iter(range(10_000))


def mem(content: str, *, entity: str | None = None, days_ago: float = 1.0) -> MemoryRecord:
    k = next(_n)
    at = NOW - timedelta(days=days_ago)
    links = (
        [EntityLink(entity_id=f"e_{entity}", name=entity, type="person", said="")] if entity else []
    )
    return MemoryRecord(
        memory_id=f"m_{k:04d}", user_id=7, content=content, content_hash=f"h{k}",
        level=Level.GLOBAL, ownership=Ownership.USER, mem_type=MemType.SEMANTIC, weight=0.8,
        weight_at=at, created_at=at, updated_at=at, valid_at=at,
        source_msg_id=f"t{k:04d}", entities=links,
    )  # fmt: skip


LIVES = mem("User's sister Anna lives in Lyon", entity="Anna")
CHESS = mem("Anna plays chess with the user every Sunday", entity="Anna")
NURSE = mem("User works as a nurse on night shifts at the hospital")
TEA = mem("User drinks green tea with jasmine every morning")
BIKE = mem("User rides a red bicycle to work\nwhen it is dry")
ALL = [LIVES, CHESS, NURSE, TEA, BIKE]


def anna(records=(LIVES, CHESS)) -> EntityNote:
    return EntityNote("e_Anna", "Anna", "person", list(records))


def test_three_sections_one_line_per_item_in_reading_order():
    profile = plan_profile([NURSE, TEA], 2000, now=NOW)
    made = assemble(profile, [BIKE, LIVES], [anna()], 2000, now=NOW)
    assert [i.kind for i in made.items] == ["profile", "profile", "memory", "memory", "entity"]
    lines = made.text.split("\n")
    assert lines[0] == "## About the user" and "## Relevant memories" in lines
    assert "## People and things" in lines
    assert "- User rides a red bicycle to work when it is dry" in lines  # one line
    (entity,) = [i for i in made.items if i.kind == "entity"]
    # Anna's memory recalled already is not said again: her line says the other one
    assert entity.text == "Anna (person): Anna plays chess with the user every Sunday"
    assert entity.memory_ids == (CHESS.memory_id,) and entity.entity_id == "e_Anna"
    assert made.text == render(made.items)


def test_no_memory_is_stated_twice():
    profile = plan_profile(ALL, 2000, now=NOW)
    made = assemble(profile, [TEA, NURSE, LIVES], [anna()], 2000, now=NOW)
    cited = [m for i in made.items for m in i.memory_ids]
    assert len(cited) == len(set(cited)) and set(cited) == {r.memory_id for r in ALL}
    assert not [i for i in made.items if i.kind in ("memory", "entity")]  # all in the profile


@pytest.mark.parametrize("budget", [1, 20, 40, 60, 90, 130, 200, 300, 500, 2000])
def test_the_whole_text_fits_the_budget(budget):
    profile = plan_profile(ALL, budget, now=NOW)
    made = assemble(profile, [BIKE, TEA, LIVES], [anna()], budget, now=NOW)
    assert len(made.text) <= budget and made.text == render(made.items)
    for item in made.items:  # kept whole
        assert item.text in made.text


def test_priority_profile_first_then_memories_then_entities():
    profile = plan_profile([NURSE], 2000, now=NOW)
    memories = [TEA, BIKE]
    whole = assemble(profile, memories, [anna()], 2000, now=NOW)
    assert [i.kind for i in whole.items] == ["profile", "memory", "memory", "entity"]
    # room for the profile's line and one memory: the best one (rank order)
    room = len(render([i for i in whole.items if i.kind == "profile"] + [whole.items[1]]))
    cut = assemble(profile, memories, [anna()], room + 3, now=NOW)
    assert [i.memory_ids for i in cut.items] == [(NURSE.memory_id,), (TEA.memory_id,)]
    # without a profile the memories take the budget before the entities
    no_profile = assemble([], memories, [anna()], len(render(whole.items[1:3])), now=NOW)
    assert [i.kind for i in no_profile.items] == ["memory", "memory"]


def test_an_item_that_does_not_fit_is_skipped_and_a_shorter_one_kept():
    long = mem("User " + "collects very old and rare postage stamps from many countries " * 3)
    made = assemble([], [long, BIKE], [], 120, now=NOW)
    assert [i.memory_ids for i in made.items] == [(BIKE.memory_id,)]


def test_an_entity_line_is_short_and_fits_what_is_left():
    many = [mem(f"Anna visited museum number {k} in Paris last spring", entity="Anna") for k in range(30)]  # fmt: skip
    made = assemble([], [], [anna(many)], 5000, now=NOW)
    (line,) = made.items
    assert len(line.text) <= ENTITY_MAX_CHARS and line.text.startswith("Anna (person): ")
    assert set(line.memory_ids) <= {r.memory_id for r in many}
    small = assemble([], [], [anna(many)], 90, now=NOW)
    assert len(small.text) <= 90 and small.items and small.items[0].kind == "entity"
    assert assemble([], [], [anna([])], 2000, now=NOW).items == ()  # nothing to say: no line


def test_nothing_gives_an_empty_text():
    made = assemble([], [], [], 2000, now=NOW)
    assert made.items == () and made.text == ""


def test_the_query_is_the_last_user_turns():
    turns = [
        ("user", "Hi there"),
        ("assistant", "Hello! How can I help?"),
        ("user", "My sister is visiting"),
        ("user", "  "),
        ("user", "Where should we eat?"),
        ("user", "Something near Lyon"),
    ]
    assert turn_query(turns) == "My sister is visiting\nWhere should we eat?\nSomething near Lyon"
    assert turn_query([("assistant", "What is your name?")]) == "What is your name?"
    assert turn_query([("user", " \u200b "), ("assistant", "")]) is None
    assert turn_query([]) is None
    long = turn_query([("user", "word " * 2000 + "Lyon")], max_chars=100)
    assert long is not None and len(long) <= 100 and long.endswith("Lyon")
    assert long.startswith("word ")  # cut at a whole word


def test_a_long_profile_leaves_room_for_the_memories_and_entities():
    facts = [mem(f"User has hobby number {k} which is painting {k} small birds") for k in range(20)]
    profile = plan_profile(facts, 600, now=NOW)
    made = assemble(profile, [BIKE], [anna()], 600, now=NOW)
    kinds = [i.kind for i in made.items]
    assert "memory" in kinds and "entity" in kinds and kinds.count("profile") >= 3
    assert len(made.text) <= 600
    alone = assemble(profile, [], [], 600, now=NOW)  # nothing else: the profile fills it
    assert len(alone.text) > len(render([i for i in made.items if i.kind == "profile"]))
