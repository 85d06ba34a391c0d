"""The lifecycle dataflow, as a straight script of named steps (docs/architecture.md#lifecycle).

    kafka (memory.recall_hits)
    → parse (bad → DLQ)
    → per user, collect for ``recall_hits_window_s``
    → one ``recall_hits`` command per user and window → memory.commands

The keyed writer of the ingest flow applies those commands (weight recovery, recall
count, last_recalled_at), so recovery never races with ingest. The periodic pass
(decay/expiry → archive, purge, reconcile) is not a step here: it runs for a while and
waits on the writer, which would hold up the hits; ``schedule.LifecyclePasses`` runs it
on a thread beside this flow (in the node, and in ``main.py`` when run alone).

``build_flow(rt, source)`` lets tests swap the source; run it alone with
``python -m bytewax.run dataflows.lifecycle.main:flow``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TypeGuard

import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.inputs import Source

from dataflows.ingest.items import Rejected
from dataflows.lifecycle.hits import CommandSink, DlqSink, parse_hits, window_command
from dataflows.runtime import Runtime
from dataflows.sources import StoppableKafkaSource
from memstream.schemas.events import TOPIC_RECALL_HITS, RecallHits
from memstream.schemas.tenants import scoped


def kafka_source(rt: Runtime) -> StoppableKafkaSource:
    bus = rt.stores.kafka
    return StoppableKafkaSource(
        brokers=[b.strip() for b in bus.bootstrap.split(",")],
        topics=[bus.topic(TOPIC_RECALL_HITS)],
        tail=True,
        batch_size=1000,
        add_config=dict(bus.security),
        stop=rt.stop,
    )


def _is_hits(x: RecallHits | Rejected) -> TypeGuard[RecallHits]:
    return isinstance(x, RecallHits)


def build_flow(rt: Runtime, source: Source | None = None, flow_id: str = "lifecycle") -> Dataflow:
    window = timedelta(seconds=rt.settings.recall_hits_window_s)
    flow = Dataflow(flow_id)
    raw = op.input("in", flow, source or kafka_source(rt))  # KafkaSourceMessage
    parsed = op.map("parse", raw, parse_hits)  # RecallHits | Rejected
    ok = op.branch("ok", parsed, _is_hits)
    bad = op.filter_map("rejected", ok.falses, lambda x: x if isinstance(x, Rejected) else None)
    op.output("dlq", bad, DlqSink(rt))
    # (tenant|user, RecallHits): one window per (tenant, user)
    by_user = op.key_on("by_user", ok.trues, lambda h: scoped(h.tenant_id, str(h.user_id)))
    windows = op.collect("window", by_user, timeout=window, max_size=10_000)  # (user, [..])
    commands = op.filter_map("to_command", windows, window_command)  # Command
    op.output("commands", commands, CommandSink(rt))
    return flow
