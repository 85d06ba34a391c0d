"""The embed step's collect-and-launch: order, sizes, the model off the worker's thread,
and a snapshot that holds everything not yet emitted (dataflows.ingest.overlap)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.operators import StatefulLogic, _CollectState
from bytewax.testing import TestingSink, TestingSource, run_main

from dataflows.ingest.overlap import Flight, _Logic, collect_and_launch


def _flow(items, start, **kw):
    flow = Dataflow("overlap_test")
    xs = op.key_on("key", op.input("in", flow, TestingSource(items)), lambda x: f"k{x % 2}")
    out: list = []
    launched = collect_and_launch("embed", xs, start, timedelta(milliseconds=5), 8, **kw)
    op.output("out", op.key_rm("unkey", launched), TestingSink(out))
    return flow, out


def test_every_item_leaves_once_in_order_and_the_model_runs_off_the_worker():
    lists, model_threads, worker = [], set(), threading.current_thread().name

    def start(items):
        lists.append(list(items))

        def call():
            model_threads.add(threading.current_thread().name)
            time.sleep(0.002)
            return [x * 10 for x in items]

        return Flight(call, lambda result: result(), lane="test")

    flow, out = _flow(list(range(200)), start)
    run_main(flow)
    assert sorted(out) == [x * 10 for x in range(200)]
    for key in (0, 1):  # a key's items leave in the order they came
        assert [x for x in out if x // 10 % 2 == key] == [x * 10 for x in range(key, 200, 2)]
    assert max(len(x) for x in lists) == 8  # max_size
    assert model_threads == {"memstream-test_0"} and worker not in model_threads


def test_a_list_is_full_at_max_weight():
    lists, gate = [], threading.Event()

    def start(items):
        lists.append(list(items))
        return Flight(lambda: gate.wait(10) and items, lambda result: result(), lane="gated")

    logic = _Logic([], start, timedelta(seconds=60), 8, lambda x: x, 12, 2)
    for x in (5, 5, 4, 5, 9):
        logic.on_item(x)
    assert lists == [[5, 5, 4], [5, 9]]  # 5 + 5 + 4 >= 12: launched; so is 5 + 9
    gate.set()
    assert sorted(logic.on_eof()[0]) == [4, 5, 5, 5, 9] and lists[1:] == [[5, 9]]


def _logic(held, start, depth=2):
    return _Logic(held, start, timedelta(seconds=60), 2, lambda _: 1, 2, depth)


def test_snapshot_holds_what_is_in_flight_until_it_is_emitted():
    gate = threading.Event()

    def start(items):
        def call():
            gate.wait(10)
            return items

        return Flight(call, lambda result: result(), lane="gated")

    logic = _logic([], start)
    out, keep = logic.on_item("a")
    assert out == [] and keep == StatefulLogic.RETAIN and logic.snapshot() == ["a"]
    logic.on_item("b")  # two items: full, launched; the model is held at the gate
    logic.on_item("c")
    assert logic.snapshot() == ["a", "b", "c"]  # in flight, then waiting
    assert logic.on_notify() == ([], StatefulLogic.RETAIN)  # not done: nothing emitted
    gate.set()
    out, keep = logic.on_eof()
    assert out == ["a", "b", "c"] and keep == StatefulLogic.DISCARD


def test_a_failed_finish_keeps_the_list_for_the_restart():
    def start(items):
        def finish(result):
            raise OSError("store down")  # an infrastructure error: the flow restarts

        return Flight(lambda: items, finish)

    logic = _logic([], start)
    logic.on_item("a")
    logic.on_item("b")
    try:
        logic.on_eof()
    except OSError:
        pass
    assert logic.snapshot() == ["a", "b"]  # the resumed step embeds them again


def test_the_call_error_reaches_finish():
    def start(items):
        def call():
            raise ValueError("bad text")

        def finish(result):
            try:
                return result()
            except ValueError:
                return [f"refused {x}" for x in items]

        return Flight(call, finish)

    assert _logic(["a"], start).on_eof()[0] == ["refused a"]


def test_a_resumed_step_launches_at_once_and_reads_collects_snapshot():
    seen = []

    def start(items):
        seen.append(list(items))
        return Flight(lambda: items, lambda result: result())

    # what op.collect snapshotted before an upgrade: its state object
    logic = _logic(list(_CollectState(acc=["x"]).acc), start)
    assert logic.notify_at() is not None
    out, _ = logic.on_notify()
    while not out:
        time.sleep(0.001)
        out, _ = logic.on_notify()
    assert out == ["x"] and seen == [["x"]]
