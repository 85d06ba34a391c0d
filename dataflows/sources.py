"""Sources that can be told to stop, so an in-process flow ends cleanly (EOF), not mid-call.

Bytewax has no stop call for a running flow; a source that raises StopIteration ends it
after the in-flight batch has gone through every step. The node and the tests set the
event on shutdown; recovery resumes from the last snapshot next time.

Before it lists its partitions, the Kafka source waits (``ready_s``) until the broker's
metadata gives each of its topics partitions with a leader (``sinks.kafka.wait_for_topics``):
right after the topics are created Bytewax's ``list_parts`` raised, and every flow of a
new node failed once at start. A topic still not ready then raises TopicsNotReady.

Given a ``dataflows.breaker.Breaker``, a partition never hands out a record on the
breaker's skip list, replays the in-flight range one record at a time when the breaker
is careful, and keeps its skip list in its recovery snapshot beside the offset
(``{"offset": n, "skip": [...]}``; a bare offset from before resumes as it was).
"""

from __future__ import annotations

import threading
from collections import deque
from datetime import UTC, datetime, timedelta
from typing import TypedDict, cast

from bytewax.connectors.kafka import KafkaError, KafkaSource
from bytewax.inputs import StatefulSourcePartition
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END

from core.metrics import FlowMetrics
from dataflows.breaker import Breaker, Record, offset_of
from dataflows.idle import QUIET_CONSUMER, no_wait, thread_idle
from dataflows.lag import LAG, Position
from sinks.kafka import wait_for_topics

CAREFUL_POLL = timedelta(milliseconds=20)  # how often a careful partition looks again


class _Resume(TypedDict):
    """A partition's snapshot when it has a breaker: the offset and its skip list."""

    offset: int | None
    skip: list[int]


# what a partition snapshots: the next offset (bare, without a breaker) or ``_Resume``
SourceState = int | None | _Resume
# Bytewax's own Kafka partition (its errors raise: ``raise_on_errors``, the default)
_Inner = StatefulSourcePartition[Record | KafkaError[bytes | None, bytes | None], int | None]


class _StoppablePartition(StatefulSourcePartition[Record, SourceState]):
    def __init__(
        self,
        inner: _Inner,
        stop: threading.Event,
        position: Position | None = None,
        flow: FlowMetrics | None = None,
        breaker: Breaker | None = None,
        part: tuple[str, int] = ("", 0),
    ):
        self._inner = inner
        no_wait(inner)  # consume never blocks the worker (dataflows.idle)
        self._stop = stop
        self._position = position
        self._flow = flow
        self._breaker = breaker
        self._part = part
        self._held: deque[Record] = deque()  # read, not yet handed out (careful replay)
        self._wait = False

    def next_batch(self) -> list[Record]:
        if self._stop.is_set():
            raise StopIteration()
        self._wait = False
        if self._held:
            batch = self._careful([])
        else:
            batch = cast(list[Record], self._inner.next_batch())  # no KafkaError: they raise
            nxt = self._inner.snapshot()  # the next offset to read (set once it has read)
            if batch and self._position is not None and nxt is not None:
                self._position.next = nxt
            if self._breaker is not None and batch:
                self._breaker.was_read(self._part, offset_of(batch[-1]) + 1)
                batch = self._careful(batch)
        if batch and self._flow is not None:
            self._flow.read.inc(len(batch))
            self._flow.batch_in.observe(len(batch))
        thread_idle().read(len(batch) + len(self._held))
        return batch

    def _careful(self, batch: list[Record]) -> list[Record]:
        """``batch`` less the breaker's skip list; one record at a time while careful."""
        b = self._breaker
        assert b is not None
        self._held.extend(m for m in batch if not b.skipped(self._part, offset_of(m)))
        out: list[Record] = []
        while self._held:
            msg = self._held[0]
            at = offset_of(msg)
            if b.skipped(self._part, at):
                self._held.popleft()
                continue
            if not b.careful(self._part, at):
                out.append(self._held.popleft())
                continue
            if out or not b.may_hand():
                self._wait = True
                break
            self._held.popleft()
            b.handed((self._part[0], self._part[1], at), msg)
            out.append(msg)
            self._wait = True
            break
        return out

    def next_awake(self):
        if self._wait:
            return datetime.now(UTC) + CAREFUL_POLL
        return self._inner.next_awake() or thread_idle().next_awake()  # idle: dataflows.idle

    def snapshot(self) -> SourceState:
        offset = offset_of(self._held[0]) if self._held else self._inner.snapshot()
        if self._breaker is None:
            return offset
        return {"offset": offset, "skip": self._breaker.skips_from(self._part, offset or 0)}

    def close(self) -> None:
        self._inner.close()


def _resume_offset(
    state: SourceState, breaker: Breaker | None, part: tuple[str, int]
) -> int | None:
    """The offset a snapshot resumes from; its skip list goes back to the breaker."""
    if not isinstance(state, dict):
        return state  # a bare offset (or None): snapshots from before the breaker
    if breaker is not None:
        breaker.resumed(part, state.get("skip") or [])
    return state.get("offset")


class StoppableKafkaSource(KafkaSource):
    def __init__(
        self,
        brokers: list[str],
        topics: list[str],
        *,
        stop: threading.Event,
        add_config: dict[str, str] | None = None,
        ready_s: float = 30.0,
        breaker: Breaker | None = None,
        tail: bool = True,
        starting_offset: int = OFFSET_BEGINNING,
        batch_size: int = 1000,
    ):
        """Bytewax's own arguments but ``raise_on_errors``: a Kafka error raises, so only
        records (``Record``) flow on."""
        add_config = {**QUIET_CONSUMER, **(add_config or {})}  # dataflows.idle
        super().__init__(
            brokers,
            topics,
            tail=tail,
            starting_offset=starting_offset,
            add_config=add_config,
            batch_size=batch_size,
        )
        self.stop = stop
        self._ready_config = {"bootstrap.servers": ",".join(brokers), **(add_config or {})}
        self._ready_topics = list(topics)
        self._ready_s = ready_s
        self.breaker = breaker

    def list_parts(self) -> list[str]:
        wait_for_topics(self._ready_config, self._ready_topics, self._ready_s, self.stop)
        return super().list_parts()

    # bytewax annotates its own partition class here; ours wraps it (a StatefulSourcePartition)
    def build_part(  # type: ignore[override]
        self, step_id: str, for_part: str, resume_state: SourceState
    ) -> _StoppablePartition:
        flow = step_id.split(".", 1)[0]  # "<flow id>.<step>"
        idx, _, topic = for_part.partition("-")  # Bytewax names a partition "<index>-<topic>"
        part = (topic, int(idx))
        inner = super().build_part(
            step_id, for_part, _resume_offset(resume_state, self.breaker, part)
        )
        start = inner.snapshot()
        position = LAG.track(
            flow, self._ready_config, topic, int(idx), start if start is not None else OFFSET_END
        )
        return _StoppablePartition(
            inner, self.stop, position, FlowMetrics(flow), self.breaker, part
        )
