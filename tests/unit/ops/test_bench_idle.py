"""ops.bench.idle's pure parts: thread groups, per-minute figures, the deltas between two
readings and the summary (the bench itself is run by hand, not by the suite)."""

from __future__ import annotations

import os

from ops.bench.idle import (
    ThreadTime,
    by_group,
    per_minute,
    summary,
    thread_deltas,
    thread_group,
    threads,
    top_threads,
)


def test_thread_group_drops_a_trailing_number_only():
    assert thread_group("rdk:broker-1") == "rdk:broker"
    assert thread_group("rdk:broker12") == "rdk:broker"
    assert thread_group("ThreadPool12") == "ThreadPool"
    assert thread_group("uvloop_0") == "uvloop"
    assert thread_group("rdk:main") == "rdk:main"
    assert thread_group("python") == "python"
    assert thread_group("42") == "42"  # a name that is only a number stays one


def test_per_minute_is_cpu_seconds_per_minute_of_wall_time():
    assert per_minute(1.5, 30.0) == 3.0
    assert per_minute(60.0, 60.0) == 60.0  # one core
    assert per_minute(1.0, 0.0) == 0.0


def test_deltas_count_new_threads_from_zero_and_never_go_negative():
    before = [ThreadTime(1, "python", 10.0), ThreadTime(2, "rdk:main", 1.0)]
    after = [
        ThreadTime(1, "python", 12.5),
        ThreadTime(2, "rdk:main", 0.5),  # a reused id, say: not below 0
        ThreadTime(3, "rdk:broker1", 0.25),  # born in between
    ]
    got = {t.tid: t.cpu_s for t in thread_deltas(before, after)}
    assert got == {1: 2.5, 2: 0.0, 3: 0.25}


def test_groups_and_top_threads_busiest_first():
    deltas = [
        ThreadTime(1, "python", 1.0),
        ThreadTime(2, "python", 0.5),
        ThreadTime(3, "rdk:broker1", 0.25),
        ThreadTime(4, "rdk:broker-1", 0.25),
        ThreadTime(5, "MemoryWorker", 0.0),
    ]
    groups = by_group(deltas, 30.0)
    assert groups == [
        {"group": "python", "threads": 2, "cpu_s_per_min": 3.0},
        {"group": "rdk:broker", "threads": 2, "cpu_s_per_min": 1.0},
        {"group": "MemoryWorker", "threads": 1, "cpu_s_per_min": 0.0},
    ]
    top = top_threads(deltas, 30.0, n=2)
    assert [t["tid"] for t in top] == [1, 2] and top[0]["cpu_s_per_min"] == 2.0


def test_threads_reads_this_process():
    mine = threads(os.getpid())
    assert mine and all(t.cpu_s >= 0 and t.name for t in mine)
    assert os.getpid() in {t.tid for t in mine}  # the main thread's id is the pid


def test_summary_names_the_median_and_each_window():
    window = {
        "node_cpu_s_per_min": 1.2,
        "node_core_pct": 2.0,
        "node_threads": 150,
        "groups": [{"group": "python", "threads": 17, "cpu_s_per_min": 0.7}],
        "others_cpu_s_per_min": {"kafka": 2.3, "redis": 0.07},
    }
    result = {
        "node_cpu_s_per_min": 1.2,
        "config": {"duration_s": 60.0},
        "windows": [window, window],
    }
    text = summary(result)
    assert "node 1.2 CPU-s/min (median of 2 windows of 60s" in text
    assert "python x17 0.7" in text and "kafka 2.3" in text
