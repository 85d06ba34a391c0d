"""Sources that can be told to stop, so an in-process flow ends cleanly (EOF), not mid-call.

Bytewax has no stop call for a running flow; a source that raises StopIteration ends it
after the in-flight batch has gone through every step. The node and the tests set the
event on shutdown; recovery resumes from the last snapshot next time.

Before it lists its partitions, the Kafka source waits (``ready_s``) until the broker's
metadata gives each of its topics partitions with a leader (``sinks.kafka.wait_for_topics``):
right after the topics are created Bytewax's ``list_parts`` raised, and every flow of a
new node failed once at start. A topic still not ready then raises TopicsNotReady.
"""

from __future__ import annotations

import threading
from typing import Any, cast

from bytewax.connectors.kafka import KafkaSource
from bytewax.inputs import StatefulSourcePartition
from confluent_kafka import OFFSET_END

from core.metrics import FlowMetrics
from dataflows.lag import LAG, Position
from sinks.kafka import wait_for_topics


class _StoppablePartition(StatefulSourcePartition):
    def __init__(
        self,
        inner: StatefulSourcePartition,
        stop: threading.Event,
        position: Position | None = None,
        flow: FlowMetrics | None = None,
    ):
        self._inner = inner
        self._stop = stop
        self._position = position
        self._flow = flow

    def next_batch(self) -> list[Any]:
        if self._stop.is_set():
            raise StopIteration()
        batch = cast(list[Any], self._inner.next_batch())  # Kafka's partition: a list
        if batch:
            if self._position is not None:
                self._position.next = self._inner.snapshot()  # the next offset to read
            if self._flow is not None:
                self._flow.read.inc(len(batch))
                self._flow.batch_in.observe(len(batch))
        return batch

    def next_awake(self):
        return self._inner.next_awake()

    def snapshot(self) -> Any:
        return self._inner.snapshot()

    def close(self) -> None:
        self._inner.close()


class StoppableKafkaSource(KafkaSource):
    def __init__(
        self,
        brokers: list[str],
        topics: list[str],
        *,
        stop: threading.Event,
        add_config: dict[str, str] | None = None,
        ready_s: float = 30.0,
        **kwargs: Any,
    ):
        super().__init__(brokers, topics, add_config=add_config, **kwargs)
        self.stop = stop
        self._ready_config = {"bootstrap.servers": ",".join(brokers), **(add_config or {})}
        self._ready_topics = list(topics)
        self._ready_s = ready_s

    def list_parts(self) -> list[str]:
        wait_for_topics(self._ready_config, self._ready_topics, self._ready_s, self.stop)
        return super().list_parts()

    # bytewax annotates its own partition class here; ours wraps it (a StatefulSourcePartition)
    def build_part(  # type: ignore[override]
        self, step_id: str, for_part: str, resume_state: Any
    ) -> _StoppablePartition:
        inner = super().build_part(step_id, for_part, resume_state)
        flow = step_id.split(".", 1)[0]  # "<flow id>.<step>"
        idx, _, topic = for_part.partition("-")  # Bytewax names a partition "<index>-<topic>"
        start = inner.snapshot()
        position = LAG.track(
            flow, self._ready_config, topic, int(idx), start if start is not None else OFFSET_END
        )
        return _StoppablePartition(inner, self.stop, position, FlowMetrics(flow))
