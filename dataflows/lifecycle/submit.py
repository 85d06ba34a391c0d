"""How a pass's commands get applied: a ``Via`` takes commands, returns their results.

- :class:`KafkaVia` (the node, the standalone lifecycle process, tests): produce to
  ``memory.commands`` keyed by user and wait for each result on Redis, as the API's
  ``run_command`` does, but synchronously and for a whole chunk at once (one produce
  round, one wait), so a pass over many users is pipelined rather than serial.
- :class:`DirectVia` (``memstream lifecycle run`` with no node running): call the very
  same handlers in this process and make the chunk durable with one ``MemoryStore.write``
  (merged as the ingest sink merges a batch: a purge's change-log mutation costs about a
  second whatever its size). Only safe when no ingest flow writes those users meanwhile.

A result is the handler's ``{"code", "msg", "data"}``; None when no answer came in time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import cast

from core import tracing
from dataflows.ingest.commands import apply_command
from dataflows.ingest.items import CommandResult, IncomingCommand, Source
from dataflows.ingest.sink import merge_applied
from dataflows.ingest.writer import Writer
from dataflows.lifecycle import commands as _handlers  # noqa: F401  (registers the handlers)
from dataflows.runtime import Runtime
from memstream.schemas.commands import Command, result_key
from memstream.schemas.events import TOPIC_COMMANDS
from sinks.stores import Stores

Result = CommandResult | None
Via = Callable[[Sequence[Command]], list[Result]]


class KafkaVia:
    def __init__(self, stores: Stores, timeout_s: float = 120.0):
        self.stores = stores
        self.timeout_s = timeout_s

    def __call__(self, commands: Sequence[Command]) -> list[Result]:
        bus = self.stores.kafka
        topic = bus.topic(TOPIC_COMMANDS)
        traced = tracing.headers()  # the pass's trace goes on in the writer (core.tracing)
        for cmd in commands:
            bus.produce_json(topic, str(cmd.user_id), cmd.model_dump(mode="json"), traced)
        bus.flush(10)
        return self._wait([c.result_id for c in commands])

    def _wait(self, result_ids: list[str]) -> list[Result]:
        client = self.stores.redis.client
        slot = {result_key(rid): i for i, rid in enumerate(result_ids)}
        out: list[Result] = [None] * len(result_ids)
        deadline = time.monotonic() + self.timeout_s
        while slot and time.monotonic() < deadline:
            got = client.blpop(list(slot), timeout=0.3)  # under the client's socket timeout
            if got is not None:
                key, value = got
                out[slot.pop(cast(str, key))] = json.loads(value)  # decode_responses=True
        return out


class DirectVia:
    def __init__(self, rt: Runtime):
        self.rt = rt
        self.writer = Writer(rt)

    def __call__(self, commands: Sequence[Command]) -> list[Result]:
        applied = [apply_command(self.writer, IncomingCommand(c, _DIRECT)) for c in commands]
        self.rt.memories.write(merge_applied(applied).batch)
        return [a.command_results[0][1] if a.command_results else None for a in applied]


_DIRECT = Source("direct", 0, 0, None, None)
