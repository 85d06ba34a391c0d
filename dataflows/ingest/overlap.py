"""The embed step's batching, with the model off the worker's thread.

``op.collect`` then ``op.flat_map`` ran the model on the worker's thread: while ONNX
Runtime embedded a batch, parsing, extraction, the writer and the sinks waited, and
while they ran the model idled. ``collect_and_launch`` collects a shard's sealed batches
as ``op.collect`` did (up to ``max_size`` items or ``max_weight`` of work, ``timeout``
after the first one waiting, at once when they waited for the model) and hands each
collected list to ``start``, which prepares it on the worker's thread and queues its
model call on the shard's own model thread. Up to ``depth`` lists are in flight; the
step looks every ``POLL`` whether the oldest is done and emits its output: the model
embeds list N+1 while the worker writes list N. ONNX Runtime releases the GIL while it
runs.

Nothing is lost on a crash: the step's snapshot is every sealed item it has not emitted,
those in flight included (what ``op.collect`` snapshotted was the same list), and a
resumed step embeds them again. A shard's lists leave in the order they came. The step
id is ``collect``'s, and a snapshot ``op.collect`` wrote before an upgrade is read as
its list.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Generic, Protocol, TypeVar

from bytewax.dataflow import operator
from bytewax.operators import KeyedStream, StatefulLogic, stateful

V = TypeVar("V")
T = TypeVar("T")
W = TypeVar("W")

POLL = timedelta(milliseconds=2)  # how often a step with a list in flight looks at it
# A model thread takes the GIL back after each ONNX Runtime call, behind a worker thread
# busy in Python that gives it up only every switch interval (5 ms by default). At 1 ms,
# RealMem's ingest ran ~5 % faster here (186 vs 177 turns/s, one run each).
SWITCH_INTERVAL_S = 0.001

_threads: dict[str, ThreadPoolExecutor] = {}
_threads_lock = threading.Lock()


def model_thread(lane: str) -> ThreadPoolExecutor:
    """The one thread that runs ``lane``'s model calls in turn (a lane per shard)."""
    with _threads_lock:
        if lane not in _threads:
            sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
            _threads[lane] = ThreadPoolExecutor(1, thread_name_prefix=f"memstream-{lane}")
        return _threads[lane]


class Landing(Protocol[W]):
    """What the step holds of a launched list: whether it is done, and its output."""

    def ready(self) -> bool: ...

    def take(self) -> list[W]: ...


class Flight(Generic[T, W]):
    """A collected list whose model ``call`` runs on ``lane``'s thread; ``take`` gives the
    step's output: ``finish(result)``, where ``result()`` is the call's (or raises its
    error)."""

    def __init__(
        self,
        call: Callable[[], T],
        finish: Callable[[Callable[[], T]], list[W]],
        lane: str = "model",
    ) -> None:
        self._future: Future[T] = model_thread(lane).submit(call)
        self._finish = finish

    def ready(self) -> bool:
        return self._future.done()

    def take(self) -> list[W]:
        """The step's output (waits for the call)."""
        return self._finish(self._future.result)


def now() -> datetime:
    return datetime.now(UTC)


class _Logic(StatefulLogic[V, W, list[V]]):
    def __init__(
        self,
        held: list[V],
        start: Callable[[list[V]], Landing[W]],
        timeout: timedelta,
        max_size: int,
        weight: Callable[[V], int],
        max_weight: int,
        depth: int,
    ) -> None:
        self._start = start
        self._timeout = timeout
        self._max = max_size
        self._weight = weight
        self._max_weight = max_weight
        self._depth = depth
        self._waiting: list[V] = held
        self._due: datetime | None = now() if held else None  # a resumed list goes at once
        self._flights: deque[tuple[list[V], Landing[W]]] = deque()

    def on_item(self, value: V) -> tuple[list[W], bool]:
        if not self._waiting:
            self._due = now() + self._timeout
        self._waiting.append(value)
        return self._step(), self._keep()

    def on_notify(self) -> tuple[list[W], bool]:
        return self._step(), self._keep()

    def on_eof(self) -> tuple[list[W], bool]:
        out: list[W] = []
        while self._waiting:
            self._launch()
        while self._flights:
            out += self._land()
        return out, StatefulLogic.DISCARD

    def notify_at(self) -> datetime | None:
        if self._flights:
            return now() + POLL
        return self._due if self._waiting else None

    def snapshot(self) -> list[V]:
        return [item for items, _ in self._flights for item in items] + self._waiting

    def _step(self) -> list[W]:
        out: list[W] = []
        while self._flights and self._flights[0][1].ready():
            out += self._land()
            if self._waiting:  # they waited for the model: no reason to wait longer
                self._due = now()
        while self._waiting and len(self._flights) < self._depth:
            due = self._due is not None and now() >= self._due
            if not due and self._full(self._waiting) is None:
                break
            self._launch()
        return out

    def _full(self, items: list[V]) -> int | None:
        """How many of ``items`` make a full list (None: not enough of them)."""
        total = 0
        for n, item in enumerate(items[: self._max], 1):
            total += max(1, self._weight(item))
            if total >= self._max_weight:
                return n
        return self._max if len(items) >= self._max else None

    def _launch(self) -> None:
        n = self._full(self._waiting) or len(self._waiting)
        items, self._waiting = self._waiting[:n], self._waiting[n:]
        self._due = now() + self._timeout if self._waiting else None
        self._flights.append((items, self._start(items)))

    def _land(self) -> list[W]:
        _, flight = self._flights[0]
        out = flight.take()
        self._flights.popleft()  # after take: were it to raise, the snapshot keeps it
        return out

    def _keep(self) -> bool:
        busy = self._flights or self._waiting
        return StatefulLogic.RETAIN if busy else StatefulLogic.DISCARD


@operator
def collect_and_launch(
    step_id: str,
    up: KeyedStream[V],
    start: Callable[[list[V]], Landing[W]],
    timeout: timedelta,
    max_size: int,
    weight: Callable[[V], int] = lambda _: 1,
    max_weight: int | None = None,
    depth: int = 2,
) -> KeyedStream[W]:
    """Per key: collect items as ``op.collect`` does and ``start`` each collected list,
    ``depth`` of them in flight at most; a landed list's output is emitted item by item.
    A list is full at ``max_size`` items or at ``max_weight`` (their ``weight``s summed)."""

    def build(resume: list[V] | None) -> _Logic[V, W]:
        held = list(getattr(resume, "acc", resume) or [])  # op.collect's _CollectState too
        return _Logic(held, start, timeout, max_size, weight, max_weight or max_size, depth)

    return stateful("stateful", up, build)
