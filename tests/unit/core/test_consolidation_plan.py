"""Consolidation planning (pure): which memories merge, and what the merged one carries."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from core.capacity import Counters
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
from schemas.enums import Level, MemType, Ownership, Status
from schemas.memory import MemoryRecord

S = Settings.model_construct()
NOW = datetime(2025, 6, 1, tzinfo=UTC)
DIM = 16
_n = itertools.count()


def topic(k: int, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[k] = 1.0
    if noise:
        v += np.random.default_rng(seed).normal(0, noise, DIM).astype(np.float32)
    return v


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


def plan(pairs, needs, settings=S, cause="t1"):
    records = [r for r, _ in pairs]
    vectors = np.stack([v for _, v in pairs])
    return plan_consolidation(records, vectors, needs, NOW, settings, cause)


def members(clusters) -> list[set[str]]:
    return [set(c.members) for c in clusters]


def test_similar_memories_merge_unrelated_ones_stay():
    a1, a2 = mem("likes green tea"), mem("enjoys green tea every day")
    others = [(mem(f"fact number {k}"), topic(k)) for k in range(2, 8)]
    pairs = [(a1, topic(0, 0.05, 1)), (a2, topic(0, 0.05, 2)), *others]
    assert members(plan(pairs, {"app:chat": 1})) == [{a1.memory_id, a2.memory_id}]
    # asking for more than links allow frees what it can; the rest is eviction's
    assert members(plan(pairs, {"app:chat": 5})) == [{a1.memory_id, a2.memory_id}]


def test_turns_of_one_session_link_even_when_unrelated():
    b, c = mem("plays chess", source_session_id="s1"), mem("owns a kayak", source_session_id="s1")
    d = mem("speaks Portuguese", source_session_id="s2")
    pairs = [(b, topic(1)), (c, topic(2)), (d, topic(3)), (mem("x"), topic(4))]
    assert members(plan(pairs, {"app:chat": 3})) == [{b.memory_id, c.memory_id}]


def test_a_shared_rare_name_links_but_a_name_everyone_mentions_does_not():
    z1 = mem("the bakery of Zorvath was great")
    z2 = mem("we stayed two nights in Zorvath")
    common = [mem(f"priya said thing {k} to Priya's friend Priya") for k in range(3)]
    pairs = [(z1, topic(1)), (z2, topic(2)), *((m, topic(3 + k)) for k, m in enumerate(common))]
    pairs += [(mem("alone"), topic(9)), (mem("also alone"), topic(10))]
    assert members(plan(pairs, {"app:chat": 4})) == [{z1.memory_id, z2.memory_id}]


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
    a = mem("likes green tea", source_session_id="s1")
    b = mem("likes green tea a lot", source_session_id="s1", **other)
    pairs = [(a, topic(0)), (b, topic(0))]
    assert plan(pairs, {"app:chat": 1, "total": 1, "global": 1}) == []


def test_persona_agent_memories_never_merge():
    tags = {"persona": True}
    a = mem("answers calmly", ownership=Ownership.AGENT, custom_tags=tags)
    b = mem("answers very calmly", ownership=Ownership.AGENT, custom_tags=tags)
    assert plan([(a, topic(0)), (b, topic(0))], {"app:chat": 1}) == []


def test_total_merges_within_each_scope_never_across():
    x = [mem(f"x fact {k}", app_id="x", source_session_id="sx") for k in range(3)]
    y = [mem(f"y fact {k}", app_id="y", source_session_id="sy") for k in range(3)]
    pairs = [(m, topic(k)) for k, m in enumerate(x + y)]
    clusters = plan(pairs, {"total": 4})
    assert sum(len(c.members) - 1 for c in clusters) == 4
    for c in clusters:
        apps = {m.app_id for m in x + y if m.memory_id in c.members}
        assert len(apps) == 1


def test_the_lowest_weights_merge_first():
    low = [mem(f"low {k}", weight=0.3) for k in range(2)]
    high = [mem(f"high {k}", weight=0.8) for k in range(2)]
    pairs = [(low[0], topic(0)), (low[1], topic(0)), (high[0], topic(1)), (high[1], topic(1))]
    pairs += [(mem(f"filler {k}"), topic(2 + k)) for k in range(4)]
    assert members(plan(pairs, {"app:chat": 1})) == [{m.memory_id for m in low}]


def test_planning_stops_once_enough_room_is_made():
    same = [(mem(f"likes tea {k}", source_session_id="s"), topic(0, 0.01, k)) for k in range(6)]
    clusters = plan(same, {"app:chat": 2})
    assert sum(len(c.members) - 1 for c in clusters) == 2


def test_cluster_size_and_text_length_are_bounded():
    same = [(mem(f"likes tea {k}", source_session_id="s"), topic(0, 0.01, k)) for k in range(7)]
    small = S.model_copy(update={"consolidation_max_cluster": 3})
    assert all(len(c.members) <= 3 for c in plan(same, {"app:chat": 10}, small))
    short = S.model_copy(update={"consolidation_max_chars": 40})
    clusters = plan(same, {"app:chat": 10}, short)
    assert clusters and all(
        len("; ".join(["likes tea 0"] * len(c.members))) <= 40 for c in clusters
    )
    assert plan(same, {"app:chat": 10}, S.model_copy(update={"consolidation_min_cluster": 8})) == []


def test_ids_are_deterministic_whatever_the_input_order():
    same = [(mem(f"likes tea {k}", source_session_id="s"), topic(0, 0.01, k)) for k in range(5)]
    first = plan(same, {"app:chat": 3})
    shuffled = same[:]
    random.Random(3).shuffle(shuffled)
    assert plan(shuffled, {"app:chat": 3}) == first
    assert [c.memory_id for c in plan(same, {"app:chat": 3}, cause="t2")] != [
        c.memory_id for c in first
    ]
    assert (
        merge_id(7, ["a", "b"], "t") == merge_id(7, ["b", "a"], "t") != merge_id(8, ["a", "b"], "t")
    )
    for c in first:  # members in time order
        valid = [next(r.valid_at for r, _ in same if r.memory_id == m) for m in c.members]
        assert valid == sorted(valid)


def test_the_merged_memory_carries_all_sources_the_top_weight_and_the_earliest_time():
    t = NOW - timedelta(days=40)
    early = mem("Priya started a pottery class.", valid_at=t, weight=0.6, weight_at=NOW)
    mid = mem(
        "Priya; her class meets on Tuesdays",
        valid_at=t + timedelta(days=1),
        weight=0.8,
        weight_at=NOW - timedelta(days=30),  # decayed to 0.8·8^(−1/3) = 0.4
        mem_type=MemType.EPISODIC,
        source_msg_id="a",
        source_msg_ids=["a", "b"],
        recall_count=2,
        last_recalled_at=NOW - timedelta(days=2),
    )
    late = mem("She made a vase", valid_at=t + timedelta(days=2), weight=0.5, recall_count=1)
    text = bounded_join([m.content for m in (early, mid, late)], 600)
    rec = merged_record([late, early, mid], "m_merged", text, NOW, S)
    assert (
        rec.content
        == "Priya started a pottery class; Priya; her class meets on Tuesdays; She made a vase"
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
        "likes tea; likes coffee", source_session_id="s", source_msg_ids=[f"x{k}" for k in range(7)]
    )
    pair = [mem(f"likes tea {k}", source_session_id="s") for k in range(2)]
    pairs = [(big, topic(0)), (pair[0], topic(0, 0.01, 1)), (pair[1], topic(0, 0.01, 2))]
    clusters = plan(pairs, {"app:chat": 2})
    assert members(clusters) == [{p.memory_id for p in pair}]  # 7 + 2 sources > 8
