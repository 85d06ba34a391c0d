"""What a whole-user purge leaves behind in the flow: nothing (DESIGN §7, privacy).

Turns sent before a purge may still wait in the session window (or in a batch between
steps) when the purge reaches the keyed writer; stored after it, they would outlive the
purge the caller was promised. The writer keeps, per user, the time of the last
whole-user purge (its Kafka timestamp: the ``write`` step's state, so it survives a
restart through the recovery snapshots) and refuses every turn sent at or before it:
its task ends ``failed`` (40401, the user was purged), nothing of it is stored. A turn
with no Kafka timestamp cannot be placed and is kept.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from dataflows.ingest.items import Extracted, IncomingCommand
from schemas.errors import ErrorCode
from sinks.tasks import TaskResult

REASON = "the user was purged after this turn was sent: it was not stored"


def purged_at(item: IncomingCommand) -> float | None:
    """The time (epoch seconds) of a whole-user purge command, None for any other."""
    cmd = item.command
    if cmd.op != "delete" or not cmd.payload.get("shred"):
        return None
    if item.source.ts_s > 0:
        return item.source.ts_s
    at = cmd.at or datetime.now(UTC)
    return at.timestamp()


def fenced(item: Extracted, fence: float | None) -> tuple[Extracted, list[TaskResult]]:
    """``item`` without the turns sent at or before ``fence``, and their failed tasks."""
    if fence is None:
        return item, []
    gone = {i.task_id for i in item.tasks if 0 < i.source.ts_s <= fence}
    if not gone:
        return item, []
    kept = dataclasses.replace(
        item,
        tasks=[i for i in item.tasks if i.task_id not in gone],
        facts=[f for f in item.facts if f.task_id not in gone],
        failures=[b for b in item.failures if b.task_id not in gone],
    )
    failed = [
        TaskResult(
            task_id,
            item.user_id,
            failed=True,
            code=int(ErrorCode.NOT_FOUND),
            reason=REASON,
            tenant_id=item.tenant_id,
        )
        for task_id in sorted(gone)
    ]
    return kept, failed
