"""A circuit breaker for the store calls of the recall path (50401,
docs/architecture.md#the-recall-path).

Only calls that leave the process are guarded: a hot-cache *load* (ClickHouse + Milvus
on a user's first touch), the cold-record load and the Milvus search of the cold path.
A recall answered from an already loaded hot cache never asks the breaker, so a dead
Milvus does not stop the users whose memories are in memory.

States (the classic three):

* ``closed`` — calls pass; each failure (an exception, or a call still running when its
  request's deadline passed) is remembered for ``window_s``. ``failures`` of them
  inside the window open the breaker.
* ``open`` — every call is refused at once (the request answers 50401 in microseconds
  instead of piling up threads behind a hung store) for ``open_s``.
* ``half_open`` — after the cool-down exactly one call is let through as a probe; its
  success closes the breaker, its failure opens it for another ``open_s``.

Defaults: 5 failures in 10 s → open 5 s. :class:`Deadline` is one request's deadline
and whether its worker is inside a store call right now: a call still running when the
request gave up is a failure (the store hangs) even though it never raised.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar, TypeVarTuple

from core import metrics

R = TypeVar("R")
Ts = TypeVarTuple("Ts")


class RecallTimeout(Exception):
    """The deadline passed, a store failed, or the breaker is open: answered as 50401."""


@dataclass
class Deadline:
    """One request's deadline, and whether its worker is inside a store call."""

    at: float  # time.monotonic() seconds
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_store: bool = False
    abandoned: bool = False

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def check(self) -> None:
        if self.abandoned or self.remaining() <= 0:
            raise RecallTimeout("recall deadline passed")

    def abandon(self) -> bool:
        """Mark the request timed out; True when its worker is stuck in a store call."""
        with self.lock:
            self.abandoned = True
            return self.in_store

    def enter_store(self) -> None:
        with self.lock:
            self.in_store = True

    def leave_store(self) -> bool:
        """False when the request was abandoned meanwhile (its failure already counted)."""
        with self.lock:
            self.in_store = False
            return not self.abandoned


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    def __init__(
        self,
        failures: int = 5,
        window_s: float = 10.0,
        open_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failures < 1 or window_s <= 0 or open_s <= 0:
            raise ValueError("failures >= 1, window_s > 0 and open_s > 0 required")
        self.failures = failures
        self.window_s = window_s
        self.open_s = open_s
        self._clock = clock
        self._lock = threading.Lock()
        self._recent: deque[float] = deque()
        self._state = BreakerState.CLOSED
        self._opened_at = 0.0
        self._probe_out = False

    @property
    def state(self) -> BreakerState:
        with self._lock:
            self._advance()
            return self._state

    def export_state(self) -> None:
        """Make ``memstream_recall_breaker_state`` read this breaker when scraped (0 closed,
        1 half-open, 2 open): the gauge asks ``state``, so a cool-down shows on time."""
        metrics.BREAKER_STATE.set_function(lambda: metrics.BREAKER_CODES[self.state])

    def allow(self) -> bool:
        """True when a store call may start now (in half-open: only the one probe)."""
        with self._lock:
            self._advance()
            if self._state is BreakerState.CLOSED:
                return True
            if self._state is BreakerState.HALF_OPEN and not self._probe_out:
                self._probe_out = True
                return True
            return False

    def success(self) -> None:
        with self._lock:
            if self._state is not BreakerState.CLOSED:
                self._state = BreakerState.CLOSED
                self._recent.clear()
            self._probe_out = False

    def failure(self) -> None:
        with self._lock:
            now = self._clock()
            if self._state is BreakerState.HALF_OPEN:
                self._open(now)
                return
            if self._state is BreakerState.OPEN:
                return
            self._recent.append(now)
            self._trim(now)
            if len(self._recent) >= self.failures:
                self._open(now)

    def call(self, deadline: Deadline, fn: Callable[[*Ts], R], *args: *Ts) -> R:
        """Run a store call through the breaker; any failure raises :class:`RecallTimeout`."""
        if not self.allow():
            raise RecallTimeout("recall circuit open: a store is failing; retry shortly")
        deadline.enter_store()
        try:
            out = fn(*args)
        except Exception as exc:
            if deadline.leave_store():
                self.failure()
            raise RecallTimeout(f"store call failed: {type(exc).__name__}: {exc}"[:300]) from exc
        if deadline.leave_store():
            self.success()
        return out

    def _open(self, now: float) -> None:
        self._state = BreakerState.OPEN
        self._opened_at = now
        self._probe_out = False
        self._recent.clear()

    def _advance(self) -> None:
        now = self._clock()
        if self._state is BreakerState.OPEN and now - self._opened_at >= self.open_s:
            self._state = BreakerState.HALF_OPEN
            self._probe_out = False
        self._trim(now)

    def _trim(self, now: float) -> None:
        while self._recent and now - self._recent[0] > self.window_s:
            self._recent.popleft()
