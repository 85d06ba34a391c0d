"""Scheduled consolidation: scopes above the high-water mark merge before they are full.

The lifecycle consolidates scopes above a high-water mark on its schedule
(docs/architecture.md#consolidation-and-paged-out-memories), so that a full scope — and a
merge on the write path — is rare. A pass finds the crowded users with two grouped counts
over ``memories FINAL`` (per scope, per user: only groups above the smallest possible mark
come back) and sends each one ``consolidate`` command; the user's keyed writer re-counts
from its hot index (the freshest state) and merges every dimension above
``consolidation_high_water_ratio`` (80 %) down to ``consolidation_low_water_ratio`` (70 %) —
see :func:`core.consolidation.high_water_needs`.

Payload ``{now, pass_id, reply}``; ids derive from ``pass_id``, so a replayed command
plans on what is there: the members it merged are gone, nothing is merged twice. A user
whose index is not loaded is consolidated on an index built for the command alone (from
ClickHouse and Milvus) and not cached: a pass over cold users must not push the hot ones
out of the cache.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

from core.capacity import GLOBAL, TOTAL, limit_for
from core.consolidation import high_water_needs
from core.settings import Settings
from core.user_index import UserIndex
from core.write_batch import WriteBatch
from dataflows.ingest.commands import answer, handler, ok
from dataflows.ingest.consolidate import consolidate
from dataflows.ingest.items import Applied
from dataflows.ingest.recorder import Recorder
from dataflows.ingest.writer import Writer, counters_of
from dataflows.runtime import Runtime
from memstream.schemas.commands import Command
from memstream.schemas.enums import Status
from memstream.schemas.payloads import ConsolidatePayload
from memstream.schemas.tenants import UserKey
from sinks.memory_filter import MemoryFilter

CONSOLIDATE_OP = "consolidate"


def consolidate_command(user: UserKey, now: datetime, pass_id: str, reply: bool = True) -> Command:
    payload = ConsolidatePayload(now=now, pass_id=pass_id, reply=reply)
    return Command.new(CONSOLIDATE_OP, "cs", user.user_id, payload, user.tenant)


def crowded_users(
    rt: Runtime, users: Iterable[int] | None = None, tenant: str | None = None
) -> list[UserKey]:
    """Users with a scope or a total above the high-water mark (ClickHouse counts); only
    ``tenant``'s when given."""
    s = rt.settings
    if not s.consolidation_enabled:
        return []
    ratio = s.consolidation_high_water_ratio
    limits = [s.capacity_global, s.capacity_per_app]
    limits += [int(v) for o in s.app_overrides.values() for k, v in o.items() if "capacity" in k]
    who = MemoryFilter.of(tenant, users)
    # only scopes above the smallest mark come back; each is then held to its own
    scopes = rt.memories.active_scope_counts(who, math.floor(ratio * min(limits) + 1e-9))
    out = {user for user, app, n in scopes if n > _mark(f"app:{app}" if app else GLOBAL, s, ratio)}
    out.update(user for user, _ in rt.memories.active_totals(who, _mark(TOTAL, s, ratio)))
    return sorted(out)


def _mark(key: str, s: Settings, ratio: float) -> int:
    return math.floor(ratio * limit_for(key, s) + 1e-9)


@handler(CONSOLIDATE_OP, ConsolidatePayload)
def apply_consolidate(
    writer: Writer, cmd: Command, p: ConsolidatePayload, _wall: datetime
) -> Applied:
    batch = WriteBatch()
    held = writer.rt.cache.peek(cmd.user_id, tenant=cmd.tenant_id)
    idx = held or _transient_index(writer.rt, UserKey(cmd.tenant_id, cmd.user_id))
    with idx.lock:
        counters = counters_of(idx)
        needs = high_water_needs(counters, writer.s) if writer.s.consolidation_enabled else {}
        merged = consolidate(writer.rt, Recorder(batch, p.now, p.pass_id, idx, counters), needs)
    members = sum(1 for m in batch.memories if m.status is Status.SUPERSEDED)
    data = {"merged": [m.memory_id for m in merged], "members": members}
    return answer(cmd, batch, ok(data)) if p.reply else Applied(batch)


def _transient_index(rt: Runtime, user: UserKey) -> UserIndex:
    """The user's ACTIVE memories with their vectors, for this command only (not cached)."""
    records = rt.memories.load(user.user_id, statuses=[Status.ACTIVE], tenant=user.tenant)
    vectors = rt.memories.vectors([r.memory_id for r in records]) if records else {}
    idx = UserIndex(
        user.user_id, rt.settings.embedding_dim, capacity=max(64, len(records)), tenant=user.tenant
    )
    for r in records:
        if r.memory_id in vectors:
            idx.upsert(r, vectors[r.memory_id])
    return idx
