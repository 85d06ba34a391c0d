"""The steps of the lifecycle flow: parse a recall-hit event, fold a window into a command.

Pure apart from the two sinks at the bottom, which hand commands to ``memory.commands``
(the keyed writer applies them) and rejects to ``memory.dlq``.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime

from bytewax.connectors.kafka import KafkaSourceMessage
from bytewax.outputs import DynamicSink, StatelessSinkPartition
from pydantic import ValidationError

from core import metrics
from dataflows.ingest.items import Rejected, Source
from dataflows.ingest.sink import send_to_dlq
from dataflows.lifecycle.commands import recall_hits_command
from dataflows.runtime import Runtime
from memstream.schemas.commands import Command
from memstream.schemas.events import TOPIC_COMMANDS, RecallHits
from memstream.schemas.limits import first_bad_text
from memstream.schemas.tenants import UserKey


def parse_hits(msg: KafkaSourceMessage) -> RecallHits | Rejected:
    src = Source(msg.topic or "", msg.partition or 0, msg.offset or 0, msg.key, msg.value)
    if not msg.value:
        return Rejected("empty message (no value)", src)
    try:
        data = json.loads(msg.value)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Rejected(f"value is not JSON: {exc}", src)
    if (bad := first_bad_text(data)) is not None:  # the text rule (docs/api.md#text)
        return Rejected(f"invalid recall hits: {bad}", src)
    try:
        hits = RecallHits.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "event"
        return Rejected(f"invalid recall hits: {where}: {first['msg']}", src)
    return hits


def window_command(user_window: tuple[str, list[RecallHits]]) -> Command | None:
    """One ``recall_hits`` command for a user's window: hit counts and the latest hit time."""
    _, hits = user_window
    counts = Counter(mid for h in hits for mid in h.memory_ids)
    if not counts:
        return None
    at = max(h.at if h.at.tzinfo else h.at.replace(tzinfo=UTC) for h in hits)
    user = UserKey(hits[0].tenant_id, hits[0].user_id)
    return recall_hits_command(user, counts, at.astimezone(UTC), reply=False)


def _hit_time(cmd: Command) -> float:
    """The latest hit time a ``recall_hits`` command carries, epoch seconds (0: none)."""
    at = cmd.payload.get("at")
    if isinstance(at, datetime):
        return at.timestamp()
    try:
        return datetime.fromisoformat(at).timestamp() if isinstance(at, str) else 0.0
    except ValueError:
        return 0.0


class _Commands(StatelessSinkPartition[Command]):
    def __init__(self, rt: Runtime):
        self.rt = rt

    def write_batch(self, items: list[Command]) -> None:
        bus = self.rt.stores.kafka
        for cmd in items:
            bus.produce_json(
                bus.topic(TOPIC_COMMANDS), str(cmd.user_id), cmd.model_dump(mode="json")
            )
        bus.flush(10)
        m = metrics.LIFECYCLE  # on memory.commands now: durable for this flow
        m.batch_sink.observe(len(items))
        m.out.inc(len(items))
        m.fresh_since([_hit_time(cmd) for cmd in items])


class CommandSink(DynamicSink[Command]):
    def __init__(self, rt: Runtime):
        self.rt = rt

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Commands:
        return _Commands(self.rt)


class _Dlq(StatelessSinkPartition[Rejected]):
    def __init__(self, rt: Runtime):
        self.rt = rt

    def write_batch(self, items: list[Rejected]) -> None:
        send_to_dlq(self.rt, items)
        metrics.LIFECYCLE.failed.inc(len(items))
        metrics.LIFECYCLE.dlq.inc(len(items))


class DlqSink(DynamicSink[Rejected]):
    def __init__(self, rt: Runtime):
        self.rt = rt

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Dlq:
        return _Dlq(self.rt)
