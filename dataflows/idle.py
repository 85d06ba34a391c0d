"""How a flow's Kafka source waits while nothing comes in (docs/benchmarks.md#bench-idle).

Bytewax 0.21.1 polls an empty source partition again after 1 ms, its Kafka partition
waits up to 1 ms in ``consume`` each time, and its worker loop parks at most 1 ms
whatever the sources say. An idle node's two flow threads so woke ~1,400 times a second
each and took 3.7 of the node's 4.8 CPU-seconds a minute. What changes (only the first
while records come in):

* **No wait in consume.** ``no_wait`` makes the partition's ``consume`` return at once
  (librdkafka fetches in its own threads; the 1 ms only blocked the worker, once per
  empty partition per round, busy or not).
* **Idle partitions polled every** ``IDLE_POLL`` (100 ms) once their thread has read
  nothing for ``IDLE_AFTER_S`` (10 s; ``next_awake``); any record read puts every
  partition of the thread back on Bytewax's own pace.
* **Coarse timers while idle.** The idle thread's timer slack (Linux ``PR_SET_TIMERSLACK``)
  is raised to ``IDLE_SLACK_NS`` (50 ms): the kernel may end its timed waits (Bytewax's
  1 ms park) that much later, so it wakes ~20 times a second, not 1,000. The first record
  read sets it back, so a flow at work keeps the default 50 µs.

* **No librdkafka statistics** (``QUIET_CONSUMER``), which Bytewax asks of every
  partition's consumer each second for a lag gauge of its own.

Idle node 4.7 -> 1.1 CPU-s a minute. The price: the first record after ``IDLE_AFTER_S``
of quiet waits up to ``IDLE_POLL`` + the slack (150 ms) before its partition is read.
All partitions of one worker run on one thread, so the idle state is kept per thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from confluent_kafka import Consumer, Message

log = logging.getLogger(__name__)

IDLE_AFTER_S = 10.0  # a thread that read nothing this long is idle
IDLE_POLL = timedelta(milliseconds=100)  # how often an idle partition is asked
IDLE_SLACK_NS = 50_000_000  # 50 ms: an idle thread's timed waits may end this late
# librdkafka's statistics, every second per partition's consumer, feed only Bytewax's own
# lag gauge (bytewax_kafka_consumer_lag); memstream_kafka_consumer_lag (dataflows.lag)
# is computed when /metrics is read
QUIET_CONSUMER = {"statistics.interval.ms": "0"}
_PR_SET_TIMERSLACK = 29  # linux/prctl.h; 0 sets the thread's default back


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def set_timer_slack(ns: int) -> bool:
    """The calling thread's timer slack (0: its default); False where it cannot be set."""
    if _PRCTL is None:
        return False
    return _PRCTL(_PR_SET_TIMERSLACK, ctypes.c_ulong(ns), 0, 0, 0) == 0


class ThreadIdle:
    """Whether the thread's partitions read anything lately; raises and lowers its
    timer slack as that changes. ``clock`` and ``slack`` are for tests."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        slack: Callable[[int], bool] = set_timer_slack,
    ) -> None:
        self._clock = clock
        self._slack = slack
        self.last_read = clock()
        self.idle = False

    def read(self, n: int) -> None:
        """One partition's batch of ``n`` records was read on this thread."""
        now = self._clock()
        if n:
            self.last_read = now
            if self.idle:
                self.idle = False
                self._slack(0)
        elif not self.idle and now - self.last_read >= IDLE_AFTER_S:
            self.idle = True
            self._slack(IDLE_SLACK_NS)

    def next_awake(self) -> datetime | None:
        """When an empty partition of this thread is asked next: Bytewax's pace (None)
        while the thread is at work, ``IDLE_POLL`` from now once it is idle."""
        return datetime.now(UTC) + IDLE_POLL if self.idle else None


_LOCAL = threading.local()


def thread_idle() -> ThreadIdle:
    """The calling thread's idle state (created on first use)."""
    state = getattr(_LOCAL, "state", None)
    if state is None:
        state = _LOCAL.state = ThreadIdle()
    return state


class _NoWaitConsumer:
    """A confluent-kafka Consumer whose ``consume`` never waits for records."""

    def __init__(self, consumer: Consumer) -> None:
        self._consumer = consumer

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        return self._consumer.consume(num_messages, 0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)


def no_wait(partition: object) -> None:
    """Make Bytewax's Kafka partition (0.21.1 keeps its consumer as ``_consumer``, a
    private attribute: reached by name) read without waiting; a partition without one is
    left as it is."""
    consumer = getattr(partition, "_consumer", None)
    if consumer is not None and not isinstance(consumer, _NoWaitConsumer):
        setattr(partition, "_consumer", _NoWaitConsumer(consumer))  # noqa: B010
