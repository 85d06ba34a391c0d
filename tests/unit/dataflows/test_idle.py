"""dataflows.idle: when a flow thread counts as idle, what it asks of the kernel, and the
consumer that never waits."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

from dataflows import idle
from dataflows.idle import IDLE_AFTER_S, IDLE_POLL, IDLE_SLACK_NS, ThreadIdle, no_wait


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _state() -> tuple[ThreadIdle, Clock, list[int]]:
    clock, slacks = Clock(), []

    def slack(ns: int) -> bool:
        slacks.append(ns)
        return True

    return ThreadIdle(clock, slack), clock, slacks


def test_a_thread_at_work_keeps_bytewax_pace_and_the_default_slack():
    state, clock, slacks = _state()
    for _ in range(10):
        clock.t += IDLE_AFTER_S / 4
        state.read(3)
        state.read(0)  # an empty partition beside a busy one
    assert not state.idle and state.next_awake() is None and slacks == []


def test_quiet_for_idle_after_s_makes_it_idle_once():
    state, clock, slacks = _state()
    clock.t += IDLE_AFTER_S - 0.01
    state.read(0)
    assert not state.idle
    clock.t += 0.02
    state.read(0)
    state.read(0)
    assert state.idle and slacks == [IDLE_SLACK_NS]  # raised once, not per poll
    before = datetime.now(UTC)
    awake = state.next_awake()
    assert awake is not None and before + IDLE_POLL <= awake <= datetime.now(UTC) + IDLE_POLL


def test_the_first_record_read_ends_idle_and_sets_the_slack_back():
    state, clock, slacks = _state()
    clock.t += IDLE_AFTER_S
    state.read(0)
    clock.t += 60
    state.read(1)
    assert not state.idle and state.next_awake() is None and slacks == [IDLE_SLACK_NS, 0]
    clock.t += IDLE_AFTER_S / 2
    state.read(0)  # counted from that record, not from the start
    assert not state.idle


def test_each_thread_has_its_own_state():
    mine = idle.thread_idle()
    assert idle.thread_idle() is mine
    other: list[ThreadIdle] = []
    t = threading.Thread(target=lambda: other.append(idle.thread_idle()))
    t.start()
    t.join()
    assert other and other[0] is not mine


def test_the_timer_slack_is_set_on_linux_and_back():
    path = "/proc/thread-self/timerslack_ns"
    try:
        default = int(open(path).read())
    except OSError:
        return  # not Linux: set_timer_slack is a no-op there
    assert idle.set_timer_slack(IDLE_SLACK_NS)
    assert int(open(path).read()) == IDLE_SLACK_NS
    assert idle.set_timer_slack(0)
    assert int(open(path).read()) == default


class FakeConsumer:
    def __init__(self) -> None:
        self.calls: list[tuple[int, float]] = []
        self.closed = False

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[str]:
        self.calls.append((num_messages, timeout))
        return []

    def close(self) -> None:
        self.closed = True


class FakePartition:
    def __init__(self) -> None:
        self._consumer: Any = FakeConsumer()


def test_no_wait_consumes_with_no_timeout_and_passes_the_rest_through():
    part = FakePartition()
    inner = part._consumer
    no_wait(part)
    no_wait(part)  # wrapped once
    part._consumer.consume(500, 0.001)
    part._consumer.close()
    assert inner.calls == [(500, 0)] and inner.closed
    assert part._consumer._consumer is inner


def test_no_wait_leaves_a_partition_without_a_consumer_alone():
    class Other:
        pass

    p = Other()
    no_wait(p)
    assert not hasattr(p, "_consumer")
