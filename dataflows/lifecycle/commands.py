"""The ``lifecycle`` and ``recall_hits`` commands, applied by the one keyed writer per user.

(The pass's third command, ``consolidate``, lives in ``highwater``; importing this module
registers all three.)

A pass only *plans* from ClickHouse; the writer re-reads each named memory and re-checks
the rule at the pass's ``now`` before acting, so a recall or an update that landed in
between wins. For a user whose hot index is loaded, ACTIVE memories are read from it
(the freshest state, ahead of the durable store) and the others (DELETED, ARCHIVED) from
ClickHouse; a memory ClickHouse calls ACTIVE but the index lacks is left for the next
pass: its vector is missing (the reconcile repairs it first) or a newer, not yet durable
mutation took it out of ACTIVE. A user without a loaded index has no such pending state,
so everything is read from ClickHouse and the index is not loaded: a pass over cold
users must not push the hot ones out of the cache.

Payloads:
- ``lifecycle``: ``{now, pass_id, memory_ids, reply}``; change ids derive from
  ``pass_id``, so a replayed command writes the same change-log rows again.
- ``recall_hits``: ``{at, hits: {memory_id: count}, reply}``; a hit not newer than the
  memory's ``last_recalled_at`` counts as a replay and is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from datetime import datetime

from core import metrics
from core.write_batch import WriteBatch
from dataflows.ingest.commands import answer, handler, ok
from dataflows.ingest.items import Applied
from dataflows.ingest.recorder import Recorder
from dataflows.ingest.writer import Writer
from dataflows.lifecycle import highwater as _highwater  # noqa: F401  (registers "consolidate")
from dataflows.lifecycle.rules import (
    Action,
    archive_reason,
    archived,
    plan_memory,
    purge_reason,
    recovered,
)
from memstream.schemas.commands import Command
from memstream.schemas.enums import OpType, Status
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.payloads import LifecyclePayload, RecallHitsPayload
from memstream.schemas.tenants import UserKey

LIFECYCLE_OP = "lifecycle"
RECALL_HITS_OP = "recall_hits"


def lifecycle_command(
    user: UserKey, now: datetime, pass_id: str, memory_ids: list[str], reply: bool = True
) -> Command:
    """One user's share of a pass; the command id is unique so results never mix."""
    payload = LifecyclePayload(now=now, pass_id=pass_id, memory_ids=memory_ids, reply=reply)
    return Command.new(LIFECYCLE_OP, "lc", user.user_id, payload, user.tenant)


def recall_hits_command(
    user: UserKey, hits: Mapping[str, int], at: datetime, reply: bool = True
) -> Command:
    payload = RecallHitsPayload(at=at, hits=dict(hits), reply=reply)
    return Command.new(RECALL_HITS_OP, "rh", user.user_id, payload, user.tenant)


def _current(writer: Writer, cmd: Command, ids: list[str]) -> list[MemoryRecord]:
    """The records to re-check (see the module docstring for where each comes from)."""
    user_id, tenant = cmd.user_id, cmd.tenant_id
    idx = writer.rt.cache.peek(user_id, tenant=tenant)
    if idx is None:
        return writer.rt.memories.load(user_id, memory_ids=ids, tenant=tenant)
    with idx.lock:
        hot = {i: idx.records[i] for i in ids if i in idx.records}
    rest = [i for i in ids if i not in hot]
    cold = writer.rt.memories.load(user_id, memory_ids=rest, tenant=tenant) if rest else []
    return [*hot.values(), *(r for r in cold if r.status is not Status.ACTIVE)]


@handler(LIFECYCLE_OP, LifecyclePayload)
def apply_lifecycle(writer: Writer, cmd: Command, p: LifecyclePayload, _wall: datetime) -> Applied:
    s, now, cause = writer.s, p.now, p.pass_id
    records = _current(writer, cmd, list(dict.fromkeys(p.memory_ids)))
    batch = WriteBatch()
    done: dict[str, list[str]] = {a.value: [] for a in Action}
    idx = writer.rt.cache.peek(cmd.user_id, tenant=cmd.tenant_id)
    rc = Recorder(batch, now, cause, idx)  # no counters: nothing is admitted after it
    with idx.lock if idx is not None else nullcontext():
        for rec in records:
            planned = plan_memory(rec, now, s)
            if planned is None:
                continue
            done[planned.action.value].append(rec.memory_id)
            metrics.LIFECYCLE_BY_ACTION[planned.action.value].inc()
            if planned.action.archives:
                reason = archive_reason(planned.action, s)
                rc.retire(rec, archived(rec, planned, now), OpType.ARCHIVE, reason)
            else:
                rc.purge(rec, purge_reason(planned.action, s))
    data = {**done, "skipped": len(p.memory_ids) - sum(len(v) for v in done.values())}
    return answer(cmd, batch, ok(data)) if p.reply else Applied(batch)


@handler(RECALL_HITS_OP, RecallHitsPayload)
def apply_recall_hits(
    writer: Writer, cmd: Command, p: RecallHitsPayload, _wall: datetime
) -> Applied:
    batch = WriteBatch()
    done, skipped = [], []
    idx = writer.rt.cache.get(cmd.user_id, tenant=cmd.tenant_id)
    rc = Recorder(batch, p.at, cmd.command_id, idx)  # no change rows, no counts: touch only
    with idx.lock:
        for memory_id, n in p.hits.items():
            rec = idx.records.get(memory_id)  # only ACTIVE memories recover
            if rec is None or (rec.last_recalled_at is not None and rec.last_recalled_at >= p.at):
                skipped.append(memory_id)
                continue
            rc.touch(recovered(rec, p.at, n, writer.s))
            done.append(memory_id)
    data = {"recovered": done, "skipped": skipped}
    return answer(cmd, batch, ok(data)) if p.reply else Applied(batch)
