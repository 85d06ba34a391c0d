"""Consolidation planning (pure): which memories merge, and what the merged one carries."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

import pytest

from core.capacity import Counters
from core.clustering import any_candidates
from core.compression import merged_text
from core.consolidation import (
    admission_needs,
    bounded_join,
    high_water_needs,
    merge_id,
    merged_record,
    plan_consolidation,
    superseded,
)
from core.hashing import content_hash
from core.settings import Settings
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.memory import MemoryRecord

S = Settings.model_construct()
NOW = datetime(2025, 6, 1, tzinfo=UTC)
_n = itertools.count()


def mem(text: str, **kw) -> MemoryRecord:
    n = next(_n)
    base = {
        "memory_id": f"m_{n:04d}",
        "user_id": 7,
        "content": text,
        "content_hash": content_hash(text),
        "level": Level.APP,
        "ownership": Ownership.USER,
        "mem_type": MemType.SEMANTIC,
        "weight": 0.8,
        "weight_at": NOW,
        "created_at": NOW,
        "updated_at": NOW,
        "valid_at": NOW - timedelta(days=100 - n % 100),
        "app_id": "chat",
        "source_msg_id": f"msg-{n}",
    }
    return MemoryRecord(**{**base, **kw})


def town(k: int, **kw) -> MemoryRecord:
    return mem(f"I visited Zorvath{k:03d} and loved its bakery", **kw)


def plan(records, needs, settings=S, cause="t1"):
    return plan_consolidation(records, needs, NOW, settings, cause)


def members(clusters) -> list[set[str]]:
    return [set(c.members) for c in clusters]


UNRELATED = [
    "I painted a sunrise last week",
    "I joined a support group",
    "I sang at a talent show",
    "I bake sourdough bread every weekend",
    "I work as a data engineer at Acme Corp",
]


def test_one_frame_merges_related_statements_of_one_session_stay():
    towns = [town(k) for k in range(1, 4)]
    session = [mem(t, source_session_id="s1") for t in UNRELATED]
    clusters = plan([*session, *towns], {"app:chat": 5})
    assert members(clusters) == [{m.memory_id for m in towns}]  # the rest is eviction's
    (c,) = clusters
    assert c.kind == "frame" and c.members == tuple(m.memory_id for m in towns)
    assert c.text == "I visited Zorvath001, Zorvath002 and Zorvath003 and loved its bakery"


def test_a_repeated_fact_merges_into_its_most_complete_telling():
    a, b = mem("I love spicy ramen"), mem("i love spicy ramen!")
    clusters = plan([a, b, *(mem(t) for t in UNRELATED)], {"app:chat": 1})
    assert [(set(c.members), c.text, c.kind) for c in clusters] == [
        ({a.memory_id, b.memory_id}, "i love spicy ramen!", "same")
    ]


def test_nothing_mergeable_plans_nothing_fast():
    import time

    verbs = "likes hates paints sells buys fixes cleans draws watches hides".split()
    things = "the old blue kettle|a small wooden boat|the green garden chair|a tall glass lamp|"
    things += "the heavy iron gate|a soft wool scarf|the cracked clay pot|a bright paper kite|"
    things += "the quiet city park|a shiny brass bell|the long river path|a warm winter coat|"
    things += "the sweet apple pie|a loud red whistle|the round oak table|a tiny silver key|"
    things += "the dusty attic box|a fresh lemon cake|the broken bike lamp|a white linen shirt"
    records = [mem(f"my sister {v} {t}") for v in verbs for t in things.split("|")]  # 200
    started = time.perf_counter()
    assert plan(records, {"app:chat": 20}) == []
    assert time.perf_counter() - started < 0.5  # shapes are cached after the first pass
    started = time.perf_counter()
    assert plan(records, {"app:chat": 20}) == []
    assert time.perf_counter() - started < 0.05


@pytest.mark.parametrize(
    "other",
    [
        {"is_important": True, "weight": 0.9},
        {"expire_at": NOW + timedelta(days=3)},
        {"app_id": "other"},
        {"level": Level.GLOBAL, "app_id": None},
        {"ownership": Ownership.AGENT},
        {"custom_tags": {"topic": "food"}},
        {"mem_type": MemType.PROCEDURAL},
        {"status": Status.ARCHIVED},
    ],
)
def test_never_important_time_bound_or_across_scopes_owners_and_tags(other):
    a, b = town(1), town(2, **other)
    assert plan([a, b], {"app:chat": 1, "total": 1, "global": 1}) == []


def test_persona_agent_memories_never_merge():
    tags = {"persona": True}
    a = mem("Answers calmly in German", ownership=Ownership.AGENT, custom_tags=tags)
    b = mem("answers calmly in German", ownership=Ownership.AGENT, custom_tags=tags)
    assert plan([a, b], {"app:chat": 1}) == []


def test_total_merges_within_each_scope_never_across():
    x = [town(k, app_id="x") for k in range(3)]
    y = [town(k, app_id="y") for k in range(3, 6)]
    clusters = plan(x + y, {"total": 4})
    assert sum(len(c.members) - 1 for c in clusters) == 4
    for c in clusters:
        assert len({m.app_id for m in x + y if m.memory_id in c.members}) == 1


def test_the_biggest_then_the_lowest_weights_merge_first():
    low = [mem(f"Ran 5 km on Monday with {k}", weight=0.3) for k in ("Priya", "Ana")]
    high = [mem(f"Swam 20 laps on Friday with {k}", weight=0.8) for k in ("Tom", "Li")]
    assert members(plan(low + high, {"app:chat": 1})) == [{m.memory_id for m in low}]
    three = [mem(f"Swam 20 laps on Friday with {k}", weight=0.9) for k in ("Bo", "Kai", "Max")]
    assert members(plan(low + three, {"app:chat": 1})) == [{m.memory_id for m in three}]


def test_planning_stops_once_enough_room_is_made():
    towns = [town(k) for k in range(6)]
    ramen = [mem("I love spicy ramen"), mem("I love spicy ramen.")]
    clusters = plan(towns + ramen, {"app:chat": 2})
    assert members(clusters) == [{m.memory_id for m in towns}]  # frees 5 ≥ 2: one merge


def test_sources_and_text_length_are_bounded():
    towns = [town(k) for k in range(1, 8)]
    small = S.model_copy(update={"consolidation_max_cluster": 3})
    clusters = plan(towns, {"app:chat": 10}, small)
    assert [len(c.members) for c in clusters] == [3, 3]  # the 7th alone frees nothing
    short = S.model_copy(update={"consolidation_max_chars": 80})
    clusters = plan(towns, {"app:chat": 10}, short)
    assert clusters and all(len(c.text) <= 80 for c in clusters)
    for c in clusters:
        texts = [m.content for m in towns if m.memory_id in c.members]
        assert len(c.text) <= 0.8 * sum(map(len, texts))
    assert (
        plan(towns, {"app:chat": 10}, S.model_copy(update={"consolidation_min_cluster": 8})) == []
    )


def test_ids_are_deterministic_whatever_the_input_order():
    towns = [town(k) for k in range(5)]
    first = plan(towns, {"app:chat": 3})
    shuffled = towns[:]
    random.Random(3).shuffle(shuffled)
    assert plan(shuffled, {"app:chat": 3}) == first
    assert [c.memory_id for c in plan(towns, {"app:chat": 3}, cause="t2")] != [
        c.memory_id for c in first
    ]
    assert (
        merge_id(7, ["a", "b"], "t") == merge_id(7, ["b", "a"], "t") != merge_id(8, ["a", "b"], "t")
    )
    for c in first:  # members in time order
        valid = [next(r.valid_at for r in towns if r.memory_id == m) for m in c.members]
        assert valid == sorted(valid)


def test_the_merged_memory_carries_all_sources_the_top_weight_and_the_earliest_time():
    t = NOW - timedelta(days=40)
    early = mem("Visited Zorvath001 and loved its bakery", valid_at=t, weight=0.6, weight_at=NOW)
    mid = mem(
        "Visited Zorvath002 and Zorvath003 and loved its bakery",
        valid_at=t + timedelta(days=1),
        weight=0.8,
        weight_at=NOW - timedelta(days=30),  # decayed to 0.8·8^(−1/3) = 0.4
        mem_type=MemType.EPISODIC,
        source_msg_id="a",
        source_msg_ids=["a", "b"],
        recall_count=2,
        last_recalled_at=NOW - timedelta(days=2),
    )
    late = mem("Visited Zorvath004 and loved its bakery", valid_at=t + timedelta(days=2),
               weight=0.5, recall_count=1)  # fmt: skip
    text, _ = merged_text([m.content for m in (early, mid, late)], 320)
    rec = merged_record([late, early, mid], "m_merged", text, NOW, S)
    assert rec.content == (
        "Visited Zorvath001, Zorvath002, Zorvath003 and Zorvath004 and loved its bakery"
    )
    assert rec.msg_ids == [early.source_msg_id, "a", "b", late.source_msg_id]
    assert rec.source_msg_id == early.source_msg_id and rec.source_msg_ids == rec.msg_ids
    assert rec.weight == pytest.approx(0.6) and rec.weight_at == NOW  # 0.6 > 0.4 decayed
    assert rec.mem_type is MemType.SEMANTIC  # the type of the top-weight member
    assert rec.valid_at == t and rec.created_at == NOW and rec.status is Status.ACTIVE
    assert rec.recall_count == 3 and rec.last_recalled_at == mid.last_recalled_at
    assert (rec.level, rec.app_id, rec.ownership) == (early.level, early.app_id, early.ownership)
    assert rec.content_hash == content_hash(text) and not rec.is_important

    gone = superseded(mid, rec.memory_id, NOW)
    assert gone.status is Status.SUPERSEDED and gone.superseded_by == "m_merged"
    assert gone.invalid_at == NOW and gone.content == mid.content and gone.msg_ids == ["a", "b"]


def test_bounded_join_keeps_order_and_its_bound():
    assert bounded_join([" likes tea. ", "", "plays chess；"], 100) == "likes tea; plays chess"
    clipped = bounded_join(["a" * 50, "b" * 50], 60)
    assert len(clipped) == 60 and clipped.endswith("…") and clipped.startswith("a" * 50)


def test_admission_needs_bring_a_full_dimension_to_its_evict_target():
    s = S.model_copy(update={"app_overrides": {"chat": {"capacity_per_app": 20}}}).for_app("chat")
    assert admission_needs(Counters({"app:chat": 19, "total": 19}), Level.APP, "chat", s) == {}
    needs = admission_needs(Counters({"app:chat": 20, "total": 20}), Level.APP, "chat", s)
    assert needs == {"app:chat": 2}  # 20 → 18 (90 %), then the new one makes 19
    full_total = Counters({"global": 10, "total": 2000})
    assert admission_needs(full_total, Level.GLOBAL, None, S) == {"total": 200}


def test_high_water_needs_bring_a_crowded_dimension_to_the_low_water_mark():
    s = S.model_copy(update={"app_overrides": {"chat": {"capacity_per_app": 20}}})
    counters = Counters({"app:chat": 17, "important:app:chat": 2, "global": 16, "total": 33})
    assert high_water_needs(counters, s) == {"app:chat": 3}  # > 16 of 20 → down to 14
    assert high_water_needs(Counters({"app:chat": 16, "total": 16}), s) == {}


def test_a_merged_memory_brings_its_sources_to_the_cluster_bound():
    big = mem(
        "I visited Zorvath001, Zorvath002 and Zorvath003 and loved its bakery",
        source_msg_ids=[f"x{k}" for k in range(7)],
    )
    pair = [town(k) for k in (4, 5)]
    small = S.model_copy(update={"consolidation_max_cluster": 8})
    clusters = plan([big, *pair], {"app:chat": 2}, small)
    assert members(clusters) == [{p.memory_id for p in pair}]  # 7 + 2 sources > 8
    clusters = plan([big, *pair], {"app:chat": 2})  # 32 by default: the list grows
    assert members(clusters) == [{big.memory_id, *(p.memory_id for p in pair)}]
    assert clusters[0].text.startswith("I visited Zorvath001, Zorvath002, Zorvath003, Zorvath004")


def test_texts_sharing_no_key_plan_nothing_so_planning_is_skipped():
    ramen = ["I love spicy ramen", "i love spicy ramen!"]
    towns = [town(k).content for k in range(1, 4)]
    assert not any_candidates(UNRELATED) and not any_candidates(UNRELATED[:1])
    assert any_candidates([*UNRELATED, *ramen]) and any_candidates(towns[:2])
    rng = random.Random(5)
    pool = [*UNRELATED, *towns, *ramen]
    skipped = 0
    for _ in range(60):
        texts = rng.sample(pool, rng.randint(2, len(pool)))
        clusters = plan([mem(t) for t in texts], {"app:chat": len(texts)})
        if not any_candidates(texts):
            skipped += 1
            assert clusters == []
        else:
            assert clusters  # here every shared key merges
    assert 0 < skipped < 60
