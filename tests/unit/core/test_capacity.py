"""Capacity counters, limits, eviction choice and the important-mark quota."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.capacity import (
    Counters,
    EvictionCandidate,
    delta_for,
    dimensions,
    evict_target,
    eviction_order,
    important_blocked,
    limit_for,
    plan_admission,
    plan_trim,
)
from core.settings import Settings
from memstream.schemas.enums import Level, Status

S = Settings.model_construct()
# Small limits so every number below can be checked by hand: targets 9 / 9 / 13.
SMALL = Settings.model_construct(capacity_global=10, capacity_per_app=10, capacity_total=15)
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def cand(mid, weight, app="x", level=Level.APP, recalled=None, important=False):
    return EvictionCandidate(mid, level, app, weight, recalled, important)


def test_each_memory_counts_in_its_scope_and_total():
    assert dimensions(Level.GLOBAL, None) == ("global", "total")
    assert dimensions(Level.GLOBAL, "x") == ("global", "total")
    assert dimensions(Level.APP, "x") == ("app:x", "total")
    assert dimensions(Level.SESSION, "x") == ("app:x", "total")
    assert dimensions(Level.SESSION, None) == ("global", "total")


def test_delta_for_important_memories_adds_important_counters():
    assert delta_for(Level.APP, "x", False) == {"app:x": 1, "total": 1}
    assert delta_for(Level.GLOBAL, None, True, -1) == {
        "global": -1, "total": -1, "important:global": -1, "important:total": -1,
    }  # fmt: skip


def test_default_limits_and_important_quota():
    assert [limit_for(k, S) for k in ("global", "app:x", "total")] == [500, 200, 2000]
    assert [limit_for("important:" + k, S) for k in ("global", "app:x", "total")] == [100, 40, 400]
    assert [evict_target(k, S) for k in ("global", "app:x", "total")] == [450, 180, 1800]
    with pytest.raises(ValueError):
        limit_for("bogus", S)


def test_app_override_changes_that_apps_limit_only():
    s = Settings.model_construct(app_overrides={"x": {"capacity_per_app": 50}})
    assert limit_for("app:x", s) == 50 and limit_for("important:app:x", s) == 10
    assert limit_for("app:y", s) == 200


def test_counters_apply_and_applied():
    c = Counters({"total": 2})
    d = c.applied({"total": 1, "app:x": 1})
    assert c.counts == {"total": 2} and d.counts == {"total": 3, "app:x": 1}
    d.apply({"app:x": -5})
    assert d.get("app:x") == 0 and "app:x" not in d.counts


def test_eviction_order_is_weight_then_never_recalled_then_oldest_recall():
    cs = [
        cand("late", 0.2, recalled=T0 + timedelta(days=2)),
        cand("early", 0.2, recalled=T0),
        cand("never", 0.2),
        cand("low", 0.1, recalled=T0 + timedelta(days=9)),
        cand("imp", 0.01, important=True),
    ]
    assert [c.memory_id for c in eviction_order(cs)] == ["low", "never", "early", "late"]


def test_room_left_means_no_eviction():
    d = plan_admission(Counters({"app:x": 9, "total": 9}), Level.APP, "x", [], SMALL)
    assert d.allowed and d.evictions == () and d.full == ()


def test_full_app_is_trimmed_to_90_percent_lowest_first():
    counters = Counters({"app:x": 10, "total": 10})
    cs = [
        cand(f"m{i}", w) for i, w in enumerate([0.05, 0.3, 0.1, 0.6, 0.7, 0.7, 0.8, 0.8, 0.9, 0.9])
    ]
    cs[0] = cand("m0", 0.01, important=True)  # lowest weight but important: kept
    d = plan_admission(counters, Level.APP, "x", cs, SMALL)
    # 10 → target 9: one eviction, the lowest non-important: m2 (0.1) → DELETED
    assert d.allowed and d.full == ("app:x",)
    assert [(e.memory_id, e.to_status) for e in d.evictions] == [("m2", Status.DELETED)]
    assert d.counter_delta == {"app:x": -1, "total": -1}


def test_archived_above_threshold_deleted_at_or_below():
    counters = Counters({"app:x": 10, "total": 10})
    cs = [cand("a", 0.1000001), cand("b", 0.9)]
    d = plan_admission(counters, Level.APP, "x", cs, SMALL)
    assert [(e.memory_id, e.to_status) for e in d.evictions] == [("a", Status.ARCHIVED)]


def test_full_total_evicts_across_scopes():
    counters = Counters({"global": 5, "app:x": 5, "app:y": 5, "total": 15})
    cs = (
        [cand(f"g{i}", 0.5 + i / 100, app=None, level=Level.GLOBAL) for i in range(5)]
        + [cand(f"x{i}", 0.3 + i / 100) for i in range(5)]
        + [cand(f"y{i}", 0.2 + i / 100, app="y", level=Level.SESSION) for i in range(5)]
    )
    d = plan_admission(counters, Level.APP, "z", cs, SMALL)
    # total 15 → target 13: the two lowest overall, y0 (0.20) and y1 (0.21)
    assert d.allowed and d.full == ("total",)
    assert [e.memory_id for e in d.evictions] == ["y0", "y1"]
    assert d.counter_delta == {"app:y": -2, "total": -2}


def test_app_eviction_also_relieves_total():
    counters = Counters({"app:x": 10, "global": 5, "total": 15})
    cs = [cand(f"x{i}", 0.3 + i / 100) for i in range(10)]
    cs += [cand(f"g{i}", 0.05, app=None, level=Level.GLOBAL) for i in range(5)]
    d = plan_admission(counters, Level.APP, "x", cs, SMALL)
    # app:x 10 → 9 evicts x0; total then 14 → 13 evicts the lowest overall, g0
    assert d.full == ("app:x", "total")
    assert [e.memory_id for e in d.evictions] == ["x0", "g0"]
    assert [e.dimension for e in d.evictions] == ["app:x", "total"]


def test_still_full_is_refused_and_evicts_nothing():
    counters = Counters({"app:x": 10, "total": 10})
    cs = [cand(f"i{i}", 0.2, important=True) for i in range(10)]
    d = plan_admission(counters, Level.APP, "x", cs, SMALL)
    assert not d.allowed and d.blocked_by == ("app:x",) and d.evictions == ()


def test_batch_admission_makes_room_for_all_new_memories():
    counters = Counters({"app:x": 9, "total": 9})
    cs = [cand(f"m{i}", 0.3 + i / 100) for i in range(9)]
    d = plan_admission(counters, Level.APP, "x", cs, SMALL, n_new=3)
    # 9 + 3 > 10: 90 % (9) is not enough for three, so the target becomes 10 − 3 = 7
    assert d.allowed and [e.memory_id for e in d.evictions] == ["m0", "m1"]


def test_important_quota_is_20_percent_of_each_dimension():
    counters = Counters({"important:app:x": 39, "important:total": 39})
    assert important_blocked(counters, Level.APP, "x", S) == ()
    counters.apply({"important:app:x": 1, "important:total": 1})
    assert important_blocked(counters, Level.APP, "x", S) == ("important:app:x",)
    assert important_blocked(Counters({"important:total": 400}), Level.GLOBAL, None, S) == (
        "important:total",
    )


def test_patrol_trims_every_full_dimension():
    counters = Counters({"app:x": 10, "app:y": 3, "total": 13, "important:total": 1})
    cs = [cand(f"x{i}", 0.3 + i / 100) for i in range(10)] + [cand("y0", 0.01, app="y")]
    d = plan_trim(counters, cs, SMALL)
    assert d.allowed and d.full == ("app:x",)
    assert [e.memory_id for e in d.evictions] == ["x0"]
    assert plan_trim(Counters({"app:x": 3, "total": 3}), cs, SMALL).evictions == ()
