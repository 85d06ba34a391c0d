"""The profile's planner (core.profile; docs/architecture.md#the-profile): what it
chooses, how it cuts to the budget, in what order, and what each item cites."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.profile import plan_profile, tidy
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.memory import EntityLink, MemoryRecord

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
_n = iter(range(10_000))


def mem(
    content: str,
    *,
    mem_type: MemType = MemType.SEMANTIC,
    weight: float = 0.8,
    days_ago: float = 1.0,
    msg: str | None = None,
    entity: str | None = None,
    **fields: object,
) -> MemoryRecord:
    k = next(_n)
    at = NOW - timedelta(days=days_ago)
    links = (
        [EntityLink(entity_id=f"e_{entity}", name=entity, type="person", said="")] if entity else []
    )
    rec = MemoryRecord(
        memory_id=f"m_{k:04d}", user_id=7, content=content, content_hash=f"h{k}",
        level=Level.GLOBAL, ownership=Ownership.USER, mem_type=mem_type, weight=weight,
        weight_at=at, created_at=at, updated_at=at, valid_at=at,
        source_msg_id=msg or f"t{k:04d}", entities=links,
    )  # fmt: skip
    for name, value in fields.items():
        setattr(rec, name, value)
    return rec


def texts(items):
    return [i.text for i in items]


def test_a_lasting_fact_beats_a_one_off_event_of_the_same_size():
    fact = mem("User is allergic to peanuts and shellfish")
    event = mem("User went to the cinema last Friday night", mem_type=MemType.EPISODIC)
    timed = mem("User has a dentist appointment on Monday", expire_at=NOW + timedelta(days=3))
    items = plan_profile([event, timed, fact], 60, now=NOW)
    assert texts(items) == ["User is allergic to peanuts and shellfish"]
    order = plan_profile([event, timed, fact], 2000, now=NOW)
    assert [i.memory_ids[0] for i in order] == [fact.memory_id, event.memory_id, timed.memory_id]


def test_important_and_heavier_memories_come_first():
    light = mem("User plays the violin in a small orchestra", weight=0.3)
    important = mem("User is a nurse working night shifts at the hospital", is_important=True)
    plain = mem("User keeps a vegetable garden behind the house")
    order = plan_profile([light, plain, important], 2000, now=NOW)
    assert [i.memory_ids[0] for i in order] == [
        important.memory_id, plain.memory_id, light.memory_id,
    ]  # fmt: skip


def test_items_fit_the_budget_whole_and_a_smaller_one_fills_the_rest():
    records = [mem(f"User collects {kind} stamps from many countries abroad") for kind in
               ("old", "rare", "blue", "tiny", "odd")] + [mem("User likes jazz records a lot")]  # fmt: skip
    for budget in (1, 29, 30, 60, 100, 200, 2000):
        items = plan_profile(records, budget, now=NOW)
        assert sum(len(i.text) for i in items) <= budget
    assert texts(plan_profile(records, 30, now=NOW)) == ["User likes jazz records a lot"]
    assert plan_profile(records, 1, now=NOW) == []
    assert len(plan_profile(records, 2000, now=NOW)) == 6


def test_citations_are_exactly_the_memories_stated_and_their_turns():
    a = mem("I visited Zorvath001 and loved its bakery", msg="s1-t02")
    b = mem("I visited Zorvath002 and loved its bakery", msg="s2-t05")
    other = mem("User works as a carpenter in a small town", msg="s3-t01")
    other.source_msg_ids = ["s3-t01", "s4-t03"]
    items = plan_profile([a, b, other], 2000, now=NOW)
    by_text = {i.text: i for i in items}
    merged = by_text["I visited Zorvath001 and Zorvath002 and loved its bakery"]
    assert merged.memory_ids == (a.memory_id, b.memory_id)
    assert merged.msg_ids == ("s1-t02", "s2-t05")
    alone = by_text["User works as a carpenter in a small town"]
    assert alone.memory_ids == (other.memory_id,)
    assert alone.msg_ids == ("s3-t01", "s4-t03")


def test_a_deleted_superseded_archived_or_expired_memory_is_never_cited():
    keep = mem("User lives in Guangzhou with two cats")
    gone = [
        mem("User lives in Shenzhen near the sea", status=Status.DELETED),
        mem("User lived in Wuhan for ten years", status=Status.SUPERSEDED,
            invalid_at=NOW - timedelta(days=1), superseded_by=keep.memory_id),
        mem("User once owned a red bicycle bought cheaply", status=Status.ARCHIVED),
        mem("User has a flight to Tokyo this week", expire_at=NOW - timedelta(hours=1)),
        mem("User moved out of the old flat last year", invalid_at=NOW - timedelta(days=2)),
    ]  # fmt: skip
    items = plan_profile([*gone, keep], 20_000, now=NOW)
    assert [i.memory_ids for i in items] == [(keep.memory_id,)]


def test_the_budget_is_spread_over_turns_and_wordings_not_spent_on_one_thing():
    same_turn = [mem(t, msg="s1-t01") for t in (
        "User is training for a marathon in spring", "User runs forty kilometres every week",
        "User bought new running shoes for training")]  # fmt: skip
    near = [mem("User loves hiking in the mountains every weekend"),
            mem("User loves hiking in the mountains every single weekend")]  # fmt: skip
    other = mem("User speaks Portuguese and a little Japanese fluently")
    items = plan_profile([*same_turn, *near, other], 150, now=NOW)
    cited = [m for i in items for m in i.memory_ids]
    assert other.memory_id in cited
    assert sum(m in cited for m in (r.memory_id for r in same_turn)) == 1
    assert sum(m in cited for m in (r.memory_id for r in near)) == 1


def test_items_about_one_entity_are_spread_and_name_it():
    anna = [mem(f"Anna {what}", entity="Anna") for what in (
        "paints watercolours of birds on weekends", "teaches maths at a secondary school",
        "runs a small bakery in the old town", "plays tennis with her neighbours often")]  # fmt: skip
    ben = mem("Ben studies marine biology at the university", entity="Ben", weight=0.5)
    rest = [mem(f"User keeps {n} fish tanks and {n} ferns in the kitchen", weight=0.3)
            for n in range(2, 20)]  # fmt: skip
    items = plan_profile([*anna, ben, *rest], 160, now=NOW)
    assert ben.memory_id in [m for i in items for m in i.memory_ids]
    assert {i.entity for i in items} == {"Anna", "Ben"}


def test_the_user_named_in_every_memory_neither_labels_nor_limits_items():
    me = [mem(f"Sam {what}", entity="Sam") for what in (
        "paints watercolours of birds on weekends", "teaches maths at a secondary school",
        "runs a small bakery in the old town", "plays tennis with the neighbours often")]  # fmt: skip
    items = plan_profile(me, 2000, now=NOW)
    assert len(items) == 4 and {i.entity for i in items} == {None}


def test_a_conversations_opening_beats_what_follows_it_and_conversations_are_spread():
    opening = mem("User wants to plan a family trip to the Maldives", days_ago=1.01)
    after = [mem(f"User thinks the {w} villa looks nice enough", days_ago=1.0)
             for w in ("beach", "garden")]  # fmt: skip
    other = mem("User is learning to play the cello slowly", days_ago=3)
    for r in (opening, *after):
        r.source_session_id = "s1"
    other.source_session_id = "s2"
    items = plan_profile([*after, other, opening], 100, now=NOW)
    assert {i.memory_ids[0] for i in items} == {opening.memory_id, other.memory_id}


def test_a_shared_leading_frame_is_said_once():
    day = "Mia said on 2026-02-27:"
    quotes = [mem(f"{day} {q}", mem_type=MemType.EPISODIC, msg=f"s9-t{k}")
              for k, q in enumerate(("the oven is broken", "we need a plumber"))]  # fmt: skip
    items = plan_profile(quotes, 2000, now=NOW)
    assert len(items) == 1 and items[0].text.count(day) == 1
    assert set(items[0].text[len(day) :].strip().split("; ")) == {
        "the oven is broken",
        "we need a plumber",
    }
    assert set(items[0].msg_ids) == {"s9-t0", "s9-t1"} and len(items[0].memory_ids) == 2


def test_markup_is_tidied():
    assert (
        tidy("*   **Work pressure:** long hours  at the bank.")
        == "Work pressure: long hours at the bank"
    )
    assert tidy("1. User likes tea;") == "User likes tea"
    assert tidy("- User keeps __init__ files tidy") == "User keeps __init__ files tidy"
    assert tidy("-20% off made User buy two") == "-20% off made User buy two"


def test_chinese_memories_merge_by_frame_and_fit_whole():
    a = mem("用户去过深圳出差并且很喜欢那里", msg="c1")
    b = mem("用户去过广州出差并且很喜欢那里", msg="c2")
    c = mem("用户的妹妹小美在上海读大学", msg="c3", entity="小美")
    items = plan_profile([a, b, c], 2000, now=NOW)
    assert set(texts(items)) == {
        "用户去过深圳和广州出差并且很喜欢那里",
        "用户的妹妹小美在上海读大学",
    }
    merged = next(i for i in items if len(i.memory_ids) == 2)
    assert merged.msg_ids == ("c1", "c2")
    assert texts(plan_profile([a, b, c], 14, now=NOW)) == ["用户的妹妹小美在上海读大学"]


def test_recent_memories_beat_old_ones_and_the_plan_is_deterministic():
    old = mem("User plays chess at the club on Tuesdays", days_ago=400)
    new = mem("User plays padel at the club on Thursdays", days_ago=2)
    records = [old, new]
    first = plan_profile(records, 2000, now=NOW)
    assert first[0].memory_ids == (new.memory_id,)
    assert plan_profile(list(reversed(records)), 2000, now=NOW) == first


def test_a_time_or_a_link_is_no_frame():
    times = [mem("User wakes up at 6:30 on weekdays"), mem("User wakes up at 6:45 on weekends")]
    links = [mem("User reads the blog https://a.example daily"),
             mem("User reads the blog https://b.example weekly")]  # fmt: skip
    items = plan_profile([*times, *links], 2000, now=NOW)
    assert {len(i.memory_ids) for i in items} == {1}
    assert set(texts(items)) == {tidy(r.content) for r in [*times, *links]}


def test_a_remembered_plan_never_outlives_a_change_to_its_memories() -> None:
    import dataclasses

    recs = [mem("Lives in Lyon"), mem("Plays the cello every Sunday"), mem("Allergic to peanuts")]
    first = plan_profile(recs, 2000, now=NOW)
    assert plan_profile(list(recs), 2000, now=NOW) == first  # the same memories: the same
    edited = [dataclasses.replace(recs[0], content="Lives in Paris"), *recs[1:]]
    assert "Lives in Paris" in texts(plan_profile(edited, 2000, now=NOW))
    assert "Lives in Lyon" not in " ".join(texts(plan_profile(edited, 2000, now=NOW)))
    gone = recs[1:]  # a delete: one memory fewer
    cited = {m for i in plan_profile(gone, 2000, now=NOW) for m in i.memory_ids}
    assert recs[0].memory_id not in cited
    expired = [dataclasses.replace(recs[2], expire_at=NOW + timedelta(hours=1)), *recs[:2]]
    later = NOW + timedelta(hours=2)  # the clock moves past an end date: not cited
    assert recs[2].memory_id in {
        m for i in plan_profile(expired, 2000, now=NOW) for m in i.memory_ids
    }
    assert recs[2].memory_id not in {
        m for i in plan_profile(expired, 2000, now=later) for m in i.memory_ids
    }
