"""The poison-pill breaker: the flow's second line of defence (docs/operations.md#poison-records).

The first line is per step: ``dataflows.ingest.guard.guarded`` turns a record's data
error into a DLQ record, and the sink bisects a write that fails for one record's data
(``dataflows.ingest.sink``). Whatever still escapes — a step no guard covers, a value
no check foresaw — stops the flow, and the runner restarts it from its last snapshot:
the same record fails again and every tenant's writes wait. This module ends that loop
without knowing the bad value:

1. A flow failure whose root cause is a data error (``guard.is_data_error``) counts; one
   of the infrastructure (a store down, a timeout) never does, and never dead-letters
   anything: the flow waits and retries as before.
2. After the second such failure in a row, the flow restarts *careful*: its sources
   replay the records that were in flight (from the snapshot up to what had been read
   when it failed) one at a time, each handed out only when the one before was reported
   done by the sink (or ``settle_s`` passed).
3. A careful flow that fails again with a data error while exactly one record is out
   blames that record: the runner sends it to ``memory.dlq`` with the reason, and its
   position joins the skip list, which the source checks before it hands anything out.
   The skip list travels in the source's recovery snapshot (not in Redis), so a restart
   does not bring the record back.
4. Past the in-flight range the flow runs at full speed again.

A record that succeeds alone goes on, so only the poison is dead-lettered. One breaker
lives as long as the process (the runner rebuilds the flow, not the breaker).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from bytewax.connectors.kafka import KafkaSourceMessage

from dataflows.ingest.guard import is_data_error

log = logging.getLogger(__name__)

Part = tuple[str, int]  # (topic, partition)
Position = tuple[str, int, int]  # (topic, partition, offset)
# a Kafka record as the flows' sources hand it out (their errors raise, never flow)
Record = KafkaSourceMessage[bytes | None, bytes | None]

FAILURES_TO_TRIP = 2  # "after a second consecutive failure" (docs/operations.md#poison-records)
SETTLE_S = 3.0  # a careful record not reported done by then is let go (it may be windowed)
CONSECUTIVE_S = 300.0  # failures further apart than this are not "in a row"


def offset_of(record: Record) -> int:
    """A read record's offset (Bytewax types it optional; a consumer sets it on every one)."""
    assert record.offset is not None, "a consumed Kafka record has an offset"
    return record.offset


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of ``exc``'s ``__cause__``/``__context__`` chain: Bytewax
    wraps a step's exception in its own runtime error (``BytewaxRuntimeError``)."""
    seen = {id(exc)}
    while True:
        nxt = exc.__cause__ or exc.__context__
        if nxt is None or id(nxt) in seen:
            return exc
        seen.add(id(nxt))
        exc = nxt


def is_data_failure(exc: BaseException) -> bool:
    return is_data_error(root_cause(exc))


@dataclass
class _Out:
    """A record handed out in careful mode and not yet reported done."""

    message: Record  # kept whole for the DLQ
    at: float


@dataclass
class Breaker:
    flow: str
    settle_s: float = SETTLE_S
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    failures: int = 0  # consecutive data failures
    last_failure: float = 0.0
    skip: set[Position] = field(default_factory=set)
    careful_until: dict[Part, int] = field(default_factory=dict)  # exclusive end offsets
    read: dict[Part, int] = field(default_factory=dict)  # next offset to read, per part
    out: dict[Position, _Out] = field(default_factory=dict)
    blamed: int = 0  # records dead-lettered by the breaker (this process)

    # --- the source's side -------------------------------------------------------
    def resumed(self, part: Part, skip: Iterable[int]) -> None:
        """A source partition restored ``skip`` from its recovery snapshot."""
        with self._lock:
            self.skip.update((part[0], part[1], o) for o in skip)

    def skipped(self, part: Part, offset: int) -> bool:
        return (part[0], part[1], offset) in self.skip

    def skips_from(self, part: Part, offset: int) -> list[int]:
        """The part's skip list at or past ``offset``, for its snapshot (older entries
        can never be read again once the snapshot is past them)."""
        with self._lock:
            return sorted(o for t, p, o in self.skip if (t, p) == part and o >= offset)

    def was_read(self, part: Part, next_offset: int) -> None:
        with self._lock:
            self.read[part] = max(self.read.get(part, 0), next_offset)

    def careful(self, part: Part, offset: int) -> bool:
        """Whether the record at ``offset`` is in the in-flight range replayed one by one."""
        with self._lock:
            end = self.careful_until.get(part)
            if end is None:
                return False
            if offset >= end:
                del self.careful_until[part]
                if not self.careful_until:
                    log.info("careful replay done", extra={"fields": {"flow": self.flow}})
                    self.failures = 0
                return False
            return True

    def may_hand(self) -> bool:
        """No careful record is out (one that outlived ``settle_s`` is let go)."""
        now = time.monotonic()
        with self._lock:
            for pos, o in list(self.out.items()):
                if now - o.at >= self.settle_s:
                    del self.out[pos]
            return not self.out

    def handed(self, position: Position, message: Record) -> None:
        with self._lock:
            self.out[position] = _Out(message, time.monotonic())

    # --- the sink's side ---------------------------------------------------------
    def done(self, positions: Iterable[Position]) -> None:
        """These records went all the way through (written, refused or dropped)."""
        if not self.out:
            return
        with self._lock:
            for pos in positions:
                self.out.pop(pos, None)

    # --- the runner's side -------------------------------------------------------
    def failed(self, exc: BaseException) -> list[Record]:
        """Account a flow failure; the messages to dead-letter (at most one)."""
        if not is_data_failure(exc):
            return []  # infrastructure: retry as before, blame nobody
        now = time.monotonic()
        with self._lock:
            if now - self.last_failure > CONSECUTIVE_S:
                self.failures = 0
            self.last_failure = now
            self.failures += 1
            if self.careful_until and len(self.out) == 1:
                ((pos, o),) = self.out.items()
                self.out.clear()
                self.skip.add(pos)
                self.blamed += 1
                return [o.message]
            self.out.clear()
            if self.failures >= FAILURES_TO_TRIP and not self.careful_until:
                self.careful_until = dict(self.read)
                log.warning(
                    "flow failed %d times on data: replaying in-flight records one at a time",
                    self.failures,
                    extra={"fields": {"flow": self.flow, "until": str(self.careful_until)}},
                )
            return []

    def forgive(self, messages: list[Record]) -> None:
        """Blamed ``messages`` that could not be dead-lettered: not skipped after all."""
        with self._lock:
            for m in messages:
                self.skip.discard((m.topic, m.partition, m.offset))
                self.blamed -= 1

    @property
    def is_careful(self) -> bool:
        return bool(self.careful_until)
