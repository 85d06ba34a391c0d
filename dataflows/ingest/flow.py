"""The ingest flow, as a straight script of named steps (docs/architecture.md#the-write-path).

    kafka (conversations + commands)
    → parse (bad → DLQ) → switch check
    → session window per (user, app, session, level, ownership)
    → extract → embed (batched across the users of one worker's shard)
    → keyed writer (dedup, evolve, capacity)
    → sink (ClickHouse, Milvus, Redis, memory.changes, task status, DLQ)

``build_flow(rt, source)`` lets tests swap the source; run it alone with
``python -m bytewax.run dataflows.ingest.main:flow``. ``workers`` is the cluster's whole
worker count (processes x workers per process): the embed step has one shard per worker
(``dataflows.ingest.shards``), each user's on the worker of their writer.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import bytewax.operators as op
from bytewax.connectors.kafka import KafkaSourceMessage
from bytewax.dataflow import Dataflow
from bytewax.inputs import Source

from core import metrics, sameness, tracing
from core.write_batch import WriteBatch
from dataflows.breaker import Breaker
from dataflows.ingest import derive as _derive  # noqa: F401  (registers profile_summary)
from dataflows.ingest import (
    entity_commands,  # noqa: F401  (entity_update, entities_backfill)
    item_commands,  # noqa: F401  (item_put)
    management,  # noqa: F401  (registers the management commands)
    registry,  # noqa: F401  (resolve_user: the external-id registry)
)
from dataflows.ingest.commands import apply_command
from dataflows.ingest.embed import embed_all, prepare
from dataflows.ingest.extract import extract
from dataflows.ingest.fence import Fences, fenced
from dataflows.ingest.guard import guarded
from dataflows.ingest.items import (
    Applied,
    CommandResult,
    Extracted,
    Incoming,
    IncomingCommand,
    Rejected,
    replay_of,
)
from dataflows.ingest.items import Source as Origin
from dataflows.ingest.overlap import Flight, collect_and_launch
from dataflows.ingest.parse import parse_command, parse_conversation
from dataflows.ingest.shards import WorkerCounts, embed_shard, shard_worker
from dataflows.ingest.sink import MemorySink
from dataflows.ingest.window import SealedItem, SessionWindow, window_key
from dataflows.ingest.writer import Writer
from dataflows.lifecycle import commands as _lifecycle  # noqa: F401  (lifecycle, recall_hits)
from dataflows.runtime import Runtime
from dataflows.sources import StoppableKafkaSource
from memstream.schemas.errors import ErrorCode
from memstream.schemas.events import TOPIC_COMMANDS, TOPIC_CONVERSATIONS
from memstream.schemas.limits import UINT64_MAX
from memstream.schemas.tenants import UserKey, scoped
from sinks.tasks import TaskResult

EMBED_WAIT = timedelta(milliseconds=20)  # a batch waits this long for more to embed with
EMBED_MAX_ITEMS = 64  # extracted batches (a session's facts each) per model call
# Facts a model call takes at most: while it runs the worker writes the call before, and
# each call's output reaches the sinks as one write. RealMem --limit 80 here: 64 -> 138
# turns/s (many small sink writes), 256 -> 164, 512 -> 177.
EMBED_MAX_FACTS = 512


def kafka_source(rt: Runtime, breaker: Breaker | None = None) -> StoppableKafkaSource:
    bus = rt.stores.kafka
    return StoppableKafkaSource(
        brokers=[b.strip() for b in bus.bootstrap.split(",")],
        topics=[bus.topic(TOPIC_CONVERSATIONS), bus.topic(TOPIC_COMMANDS)],
        tail=True,
        batch_size=500,
        add_config={**bus.security, "fetch.message.max.bytes": str(8 * 1024 * 1024)},
        stop=rt.stop,
        breaker=breaker,
    )


def build_flow(
    rt: Runtime,
    source: Source | None = None,
    flow_id: str = "ingest",
    workers: int = 1,
    embedded: WorkerCounts | None = None,
    breaker: Breaker | None = None,
) -> Dataflow:
    """The flow for a cluster of ``workers`` workers in all; ``embedded`` (optional)
    counts the facts each worker embeds; ``breaker`` (optional) is the process's
    poison-pill breaker (``dataflows.breaker``), told by the source and the sink."""
    writer = Writer(rt)
    sameness.warm()  # jieba loads at start, not on the first Chinese turn a user sends
    commands_topic = rt.stores.kafka.topic(TOPIC_COMMANDS)
    keys = rt.memories.cipher

    def opened(items: list[SealedItem]) -> list:
        out, dropped = [], []
        for item in items:
            value = item.open(keys)
            if value is None:  # the user was purged meanwhile: its tasks end failed
                dropped.extend(item.dropped_tasks())
            else:
                out.append(value)
        rt.tasks.finish(dropped)
        return out

    def parse(msg: KafkaSourceMessage):
        origin = Origin(
            msg.topic or "",
            msg.partition or 0,
            msg.offset or 0,
            msg.key,
            msg.value,
            _ts_s(msg),
            replay_of(msg.headers),
            tracing.traceparent_of(msg.headers),
        )
        parser = parse_command if msg.topic == commands_topic else parse_conversation
        with tracing.step("ingest.parse", [origin.trace], partition=origin.partition):
            return guarded(
                "parse", lambda: parser(origin, rt.settings, keys), lambda r: Rejected(r, origin)
            )

    def gate(msgs: list[KafkaSourceMessage]) -> list:
        """Parse a whole input batch, then check every user's switch in one round trip;
        the batch's data keys are read (and a new user's made) in one round trip too,
        not one by one where a value is opened, sealed or snapshotted."""
        # the Kafka key names the user, not the tenant: this warms tenant default's keys
        with metrics.ingest_stage("parse"):
            return _gate(msgs)

    def _gate(msgs: list[KafkaSourceMessage]) -> list:
        keys.prefetch(u for m in msgs if (u := _key_user(m.key)) is not None)
        items = [parse(m) for m in msgs]
        users = [
            UserKey(i.event.tenant_id, i.event.user_id) for i in items if isinstance(i, Incoming)
        ]
        by_tenant: dict[str, list[int]] = {}
        for user in users:
            by_tenant.setdefault(user.tenant, []).append(user.user_id)
        for tenant, ids in by_tenant.items():
            keys.prefetch(ids, tenant, create=True)
        switches = rt.switches.get_many(users) if users else {}
        out = []
        for item in items:
            if isinstance(item, Rejected):
                item = Applied(WriteBatch(), results=failed_task(item), rejected=[item])
            elif isinstance(item, Incoming):
                e = item.event
                sw = switches[UserKey(e.tenant_id, e.user_id)]
                if not sw.global_enabled or (e.app_id and e.app_id in sw.disabled_apps):
                    result = TaskResult(
                        item.task_id,
                        e.user_id,
                        failed=True,
                        code=int(ErrorCode.SWITCHED_OFF),
                        reason="memory is switched off for this user/app",
                        tenant_id=e.tenant_id,
                    )
                    item = Applied(WriteBatch(), results=[result], sources=[item.source])
            out.append(item)
        return out

    def window(state):
        s = rt.settings  # as they are now: session thresholds are live (sinks.config_topic)
        return SessionWindow(
            state,
            s.session_gap_s,
            s.session_max_turns,
            s.context_turns,
            rt.memories.cipher,
            dropped=rt.tasks.finish,
        )

    def run_extract(batch):
        def run() -> Extracted:
            rt.tasks.processing([(i.event.tenant_id, i.task_id) for i in batch.events])
            return extract(rt.llm, batch)

        traces = [i.source.trace for i in batch.events]
        with metrics.ingest_stage("extract"), tracing.step("ingest.extract", traces) as sp:
            out = guarded("extract", run, lambda reason: refused_batch(batch.events, reason))
            if sp is not None:
                sp.set_attributes({"events": len(batch.events), "facts": len(out.facts)})
            return out

    def write(state, item):
        def refused(reason: str) -> Applied:
            # the user's hot index may hold part of what failed: reload it from the stores
            if isinstance(item, IncomingCommand):
                rt.cache.invalidate(item.command.user_id, tenant=item.command.tenant_id)
                return refused_command(item, reason)
            rt.cache.invalidate(item.user_id, tenant=item.tenant_id)
            bad = refused_batch(item.tasks, reason).failures
            return Applied(WriteBatch(), [r for b in bad for r in failed_task(b)], rejected=bad)

        traces = [i.source.trace for i in getattr(item, "tasks", [item])]
        with metrics.ingest_stage("write"), tracing.step("ingest.write", traces):
            return _write(state, item, refused)

    def _write(state, item, refused):
        fences = Fences.of(state)  # the user's purges and scoped deletes (ingest.fence)
        if isinstance(item, IncomingCommand):
            out = guarded("write", lambda: apply_command(writer, item), refused)
            out.event_s.append(item.source.ts_s)
            out.sources.append(item.source)
            if all(r.get("code", 0) == 0 for _, r in out.command_results):
                fences.note(item, rt.settings.conversations_retention_h * 3600)
        else:
            events_s = [i.source.ts_s for i in item.tasks]
            sources = [i.source for i in item.tasks]
            item, purged = fenced(item, fences)
            if item.tasks:
                out = guarded("write", lambda: writer.apply_extracted(item), refused)
            else:
                out = Applied(WriteBatch())
            out.results.extend(purged)
            out.event_s.extend(events_s)
            out.sources.extend(sources)
        return fences.stored(), out

    flow = Dataflow(flow_id)
    raw = op.input("in", flow, source or kafka_source(rt, breaker))  # KafkaSourceMessage
    gated = op.flat_map_batch("gate", raw, gate)  # Incoming | IncomingCommand | Applied
    is_conv = op.branch("is_conv", gated, lambda x: isinstance(x, Incoming))
    is_cmd = op.branch("is_cmd", is_conv.falses, lambda x: isinstance(x, IncomingCommand))
    windows = op.stateful("window", op.key_on("by_session", is_conv.trues, window_key), window)
    extracted = op.map("extract", op.key_rm("unkey_window", windows), run_extract)  # Extracted

    # sealed while collected: the collect step snapshots what it holds at an epoch's end
    def seal(x: Extracted) -> SealedItem:
        with metrics.ingest_stage("seal"):
            tasks = (i.task_id for i in x.tasks)
            return SealedItem.seal(keys, x.user_id, x, x.tenant_id, tasks, len(x.facts))

    sealed = op.map("seal", extracted, seal)
    # one shard per worker: a user's batches on the worker that owns their writer
    shard = op.key_on("embed_shard", sealed, lambda x: embed_shard(_user_key(x), workers))

    def start_embed(items: list[SealedItem]) -> Flight:
        """Open a shard's collected batches and launch their model call (overlap.py)."""
        with metrics.ingest_stage("seal"):
            batches = opened(items)
        lane = embed_shard(_user_key(items[0]), workers)
        if embedded is not None:
            embedded.add(shard_worker(lane, workers), sum(len(b.facts) for b in batches))

        def one_by_one(_: str) -> list:  # a batch failed the shared call: find it, keep the rest
            def alone(batch: Extracted) -> list[Extracted]:
                return guarded(
                    "embed",
                    lambda: embed_all(rt.embedder, rt.cache, [batch]),
                    lambda reason: [refused_batch(batch.tasks, reason)],
                )

            return [b for batch in batches for b in alone(batch)]

        todo = guarded("embed", lambda: prepare(rt.cache, batches), lambda _: None)
        if todo is None:  # found here, on the worker; it leaves in its turn
            found = one_by_one("")
            return Flight(lambda: found, lambda result: result(), lane)
        traces = [i.source.trace for b in batches for i in b.tasks]
        facts = sum(len(b.facts) for b in batches)

        def landed(vectors):  # the model call's wait and the vectors' use
            with tracing.step("ingest.embed", traces, batches=len(batches), facts=facts):
                return guarded("embed", lambda: todo.done(vectors()), one_by_one)

        return Flight(partial(todo.model, rt.embedder), landed, lane)

    # one collected batch in the model's hands while the worker writes the one before
    vectors = op.key_rm(
        "unkey_embed",
        collect_and_launch(
            "embed_batch",
            shard,
            start_embed,
            EMBED_WAIT,
            EMBED_MAX_ITEMS,
            weight=lambda x: x.weight,
            max_weight=EMBED_MAX_FACTS,
        ),
    )
    to_writer = op.merge("to_writer", vectors, is_cmd.trues)  # Extracted | IncomingCommand
    by_user = op.key_on("by_user", to_writer, _user_key)
    applied = op.key_rm("unkey_user", op.stateful_map("write", by_user, write))  # Applied
    op.output("store", op.merge("to_sink", applied, is_cmd.falses), MemorySink(rt, breaker))
    return flow


def refused_batch(events: list[Incoming], reason: str) -> Extracted:
    """Every event of a batch refused for ``reason``: the writer fails their tasks and
    sends each to the DLQ, and writes nothing of them."""
    first = events[0].event
    failures = [
        Rejected(reason, i.source, i.task_id, first.user_id, first.tenant_id) for i in events
    ]
    return Extracted(first.user_id, list(events), failures=failures, tenant_id=first.tenant_id)


def refused_command(item: IncomingCommand, reason: str) -> Applied:
    """A command refused for ``reason``: its caller is answered, its input goes to the DLQ."""
    cmd = item.command
    answer: CommandResult = {
        "code": int(ErrorCode.BAD_PARAMETER),
        "msg": f"the command was refused: {reason}",
    }
    return Applied(
        WriteBatch(),
        command_results=[(cmd.result_id, answer)],
        rejected=[Rejected(reason, item.source, None, cmd.user_id, cmd.tenant_id)],
    )


def failed_task(bad: Rejected) -> list[TaskResult]:
    """A task refused after the API accepted it reads ``failed`` with the reason."""
    if bad.task_id is None:
        return []
    return [
        TaskResult(
            bad.task_id,
            bad.user_id or 0,
            failed=True,
            code=int(ErrorCode.BAD_PARAMETER),
            reason=bad.reason,
            tenant_id=bad.tenant_id,
        )
    ]


def _ts_s(msg: KafkaSourceMessage) -> float:
    """The message's Kafka timestamp in epoch seconds (0.0 when it has none)."""
    kind, ms = msg.timestamp if msg.timestamp else (0, 0)
    return ms / 1000.0 if kind and ms > 0 else 0.0


def _key_user(key: bytes | None) -> int | None:
    """The user a Kafka message key names (the producer's contract), if it is one."""
    if not key or len(key) > 20 or not key.isdigit():  # bytes: ASCII digits only ("-5" no)
        return None
    user_id = int(key)
    return user_id if user_id <= UINT64_MAX else None


def _user_key(item) -> str:
    """The writer's state key: one writer per (tenant, user)."""
    if isinstance(item, IncomingCommand):
        return scoped(item.command.tenant_id, str(item.command.user_id))
    return scoped(item.tenant_id, str(item.user_id))
