"""Circuit breaker states and the deadline bookkeeping of store calls (pure, fake clock)."""

from __future__ import annotations

import time

import pytest

from recall_api.breaker import BreakerState, CircuitBreaker, Deadline, RecallTimeout


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_opens_after_n_failures_inside_the_window_only():
    clock = Clock()
    b = CircuitBreaker(failures=3, window_s=10, open_s=5, clock=clock)
    b.failure()
    b.failure()
    clock.t += 11  # the first two fall out of the window
    b.failure()
    assert b.state is BreakerState.CLOSED and b.allow()
    b.failure()
    b.failure()
    assert b.state is BreakerState.OPEN
    assert not b.allow()


def test_half_open_lets_one_probe_through_and_its_result_decides():
    clock = Clock()
    b = CircuitBreaker(failures=1, window_s=10, open_s=5, clock=clock)
    b.failure()
    clock.t += 4.9
    assert not b.allow()
    clock.t += 0.2
    assert b.state is BreakerState.HALF_OPEN
    assert b.allow() and not b.allow()  # exactly one probe
    b.failure()
    assert b.state is BreakerState.OPEN
    clock.t += 5
    assert b.allow()
    b.success()
    assert b.state is BreakerState.CLOSED and b.allow() and b.allow()


def test_successes_do_not_hide_failures_while_closed():
    b = CircuitBreaker(failures=2, window_s=10, open_s=5, clock=Clock())
    b.failure()
    b.success()
    b.failure()
    assert b.state is BreakerState.OPEN


def test_call_counts_exceptions_and_refuses_when_open():
    b = CircuitBreaker(failures=2, window_s=10, open_s=5, clock=Clock())
    d = Deadline(time.monotonic() + 5)

    def boom() -> None:
        raise ConnectionError("down")

    for _ in range(2):
        with pytest.raises(RecallTimeout, match="ConnectionError"):
            b.call(d, boom)
    calls = []
    with pytest.raises(RecallTimeout, match="circuit open"):
        b.call(d, calls.append, 1)
    assert calls == []


def test_a_call_abandoned_by_its_request_is_counted_once_by_the_waiter():
    b = CircuitBreaker(failures=1, window_s=10, open_s=5, clock=Clock())
    d = Deadline(time.monotonic() + 5)

    def hangs_then_answers() -> str:
        assert d.abandon() is True  # the waiter gives up while the store call runs
        return "late"

    assert b.call(d, hangs_then_answers) == "late"
    assert b.state is BreakerState.CLOSED  # the late success is not counted either
    with pytest.raises(RecallTimeout):
        d.check()


def test_deadline_check():
    Deadline(time.monotonic() + 1).check()
    with pytest.raises(RecallTimeout):
        Deadline(time.monotonic() - 0.001).check()
