"""Sources that can be told to stop, so an in-process flow ends cleanly (EOF), not mid-call.

Bytewax has no stop call for a running flow; a source that raises StopIteration ends it
after the in-flight batch has gone through every step. The node and the tests set the
event on shutdown; recovery resumes from the last snapshot next time.
"""

from __future__ import annotations

import threading
from typing import Any

from bytewax.connectors.kafka import KafkaSource
from bytewax.inputs import StatefulSourcePartition


class _StoppablePartition(StatefulSourcePartition):
    def __init__(self, inner: StatefulSourcePartition, stop: threading.Event):
        self._inner = inner
        self._stop = stop

    def next_batch(self) -> list[Any]:
        if self._stop.is_set():
            raise StopIteration()
        return self._inner.next_batch()

    def next_awake(self):  # type: ignore[no-untyped-def]
        return self._inner.next_awake()

    def snapshot(self) -> Any:
        return self._inner.snapshot()

    def close(self) -> None:
        self._inner.close()


class StoppableKafkaSource(KafkaSource):
    def __init__(self, *args: Any, stop: threading.Event, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.stop = stop

    def build_part(self, step_id: str, for_part: str, resume_state: Any) -> _StoppablePartition:
        return _StoppablePartition(super().build_part(step_id, for_part, resume_state), self.stop)
