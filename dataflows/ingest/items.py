"""Typed values flowing between the ingest steps (see flow.py for the order)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

import numpy as np

from core.write_batch import WriteBatch
from memstream.schemas.commands import Command
from memstream.schemas.events import ConversationEvent, Message
from memstream.schemas.facts import Fact
from memstream.schemas.tenants import DEFAULT_TENANT
from sinks.tasks import TaskResult


class CommandResult(TypedDict):
    """What a command's waiting caller receives (JSON in Redis: ``sink``), the API's
    envelope: ``code`` 0 with ``data``, or an error code with its message. ``data``'s
    values are what ``json.dumps`` renders (ids, counts, lists of them)."""

    code: int
    msg: str
    data: NotRequired[Mapping[str, object]]


@dataclass(frozen=True)
class Source:
    """Where an input came from, for the DLQ headers and deterministic task ids."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    ts_s: float = 0.0  # the Kafka timestamp, epoch seconds (0: none), for freshness
    # "<dlq partition>:<offset>" when `memstream dlq replay` re-drove it (ops.dlq_cmd):
    # if it fails again, its DLQ record says so and is not re-driven again by default
    replay_of: str | None = None
    trace: str | None = None  # the record's W3C traceparent, when traces are on (core.tracing)


REPLAY_HEADER = "replay_of"


def replay_of(headers: Sequence[tuple[str, bytes | None]] | None) -> str | None:
    """The ``replay_of`` header of a Kafka record, if it has one."""
    for key, value in headers or ():
        if key == REPLAY_HEADER and value:
            return value.decode("utf-8", "replace")[:64]
    return None


@dataclass(frozen=True)
class Incoming:
    event: ConversationEvent
    task_id: str
    source: Source


@dataclass(frozen=True)
class IncomingCommand:
    command: Command
    source: Source


@dataclass(frozen=True)
class Rejected:
    """Input that goes to `memory.dlq` with ``reason``; original bytes unchanged."""

    reason: str
    source: Source
    task_id: str | None = None
    user_id: int | None = None
    tenant_id: str = DEFAULT_TENANT


@dataclass
class TurnBatch:
    """A burst of events of one (user, app, session, level, ownership) from the window."""

    events: list[Incoming]
    context: list[Message]


@dataclass
class FactItem:
    fact: Fact
    memory_id: str
    task_id: str
    incoming: Incoming
    vector: np.ndarray | None = None


@dataclass
class Extracted:
    user_id: int
    tasks: list[Incoming]
    facts: list[FactItem] = field(default_factory=list)
    failures: list[Rejected] = field(default_factory=list)
    tenant_id: str = DEFAULT_TENANT


@dataclass
class Applied:
    """What the writer decided for one input: the batch to write and the results."""

    batch: WriteBatch
    results: list[TaskResult] = field(default_factory=list)
    command_results: list[tuple[str, CommandResult]] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    event_s: list[float] = field(default_factory=list)  # the inputs' event times (Source.ts_s)
    # the Kafka records this decision stands for: the sink dead-letters them if the
    # write fails for their data alone, and reports them done to the breaker
    sources: list[Source] = field(default_factory=list)
