"""One lifecycle pass: reconcile, plan from ClickHouse, one ``lifecycle`` command per user
(and one ``consolidate`` command per user with a scope above the high-water mark).

Planning reads only the rows that may be due: the decay law, the expiry and the two
retention windows are pushed into the ``WHERE`` of a keyset-paged scan of ``memories
FINAL`` (``MemoryStore.due_rows``: one query per page of ``page_size`` rows, optionally
paced by ``pause_s``). The SQL is a slightly generous pre-filter (it ignores the persona
exemption and keeps a small margin, added here); :func:`rules.plan_memory` decides.

Commands go out in chunks of ``chunk`` users through ``via`` (see ``submit``) and the
keyed writer re-checks every rule before acting, so the pass itself mutates nothing
but Milvus repairs (``reconcile``). The clock is only ``now``: ``memstream lifecycle run
--now T`` decides exactly what a pass at instant T would.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypedDict, cast

from core import tracing
from core.timeutil import require_aware
from dataflows.lifecycle.commands import lifecycle_command
from dataflows.lifecycle.highwater import consolidate_command, crowded_users
from dataflows.lifecycle.reconcile import RECONCILE_GRACE_S, reconcile
from dataflows.lifecycle.rules import Action, Planned, plan_memory
from dataflows.lifecycle.submit import Via
from dataflows.runtime import Runtime
from memstream.schemas.enums import Ownership, Status
from memstream.schemas.json_types import JsonObject
from memstream.schemas.tenants import DEFAULT_TENANT, UserKey
from sinks.lifecycle_queries import DueBounds
from sinks.memory_filter import MemoryFilter
from sinks.stored_rows import decode_rows, instant

log = logging.getLogger(__name__)
MAX_IDS = 5000  # memory ids per command


class PassSummary(TypedDict):
    """What one pass did (``run_pass``; the API answers it as ``LifecycleSummary``)."""

    now: str  # isoformat
    users: int
    archived: int
    expired: int
    purged: int
    purged_deleted: int
    purged_archived: int
    sanitized_changes: int
    consolidated: int
    consolidated_members: int
    failed_commands: int
    reconciled: dict[str, int]
    took_s: float


@dataclass(frozen=True, slots=True)
class ScanRow:
    """The columns the rules read, without the (encrypted) content."""

    memory_id: str
    user_id: int
    status: Status
    weight: float
    weight_at: datetime
    is_important: bool
    ownership: Ownership
    expire_at: datetime | None
    archived_at: datetime | None
    deleted_at: datetime | None
    updated_at: datetime
    custom_tags: JsonObject = field(default_factory=dict)
    tenant_id: str = DEFAULT_TENANT

    @classmethod
    def of(
        cls, r: dict[str, Any], tags_of: Callable[[int, str, str], JsonObject] | None = None
    ) -> ScanRow:
        """``tags_of`` opens the sealed tags (``MemoryStore.tags_of``); only AGENT rows
        need them (the persona exemption)."""
        ownership = Ownership(r["ownership"])
        tenant = str(r.get("tenant_id") or DEFAULT_TENANT)
        tags: JsonObject = {}
        if ownership is Ownership.AGENT:
            raw = r["custom_tags"] or ""
            tags = tags_of(int(r["user_id"]), raw, tenant) if tags_of else json.loads(raw or "{}")
        return cls(
            r["memory_id"],
            int(r["user_id"]),
            Status(r["status"]),
            float(r["weight"]),
            cast(datetime, instant(r, "weight_at")),  # NOT NULL columns: never None
            bool(r["is_important"]),
            ownership,
            instant(r, "expire_at"),
            instant(r, "archived_at"),
            instant(r, "deleted_at"),
            cast(datetime, instant(r, "updated_at")),
            tags,
            tenant,
        )


def plan_pass(
    rt: Runtime,
    now: datetime,
    users: Iterable[int] | None = None,
    page_size: int = 5000,
    pause_s: float = 0.0,
    tenant: str | None = None,
) -> dict[UserKey, list[Planned]]:
    """The operations due at ``now``, per (tenant, user); only ``tenant``'s users when
    given, and of those only ``users`` when given."""
    s = rt.settings
    slack = timedelta(seconds=1)
    due = DueBounds(
        now=now,
        decay_lambda=s.decay_lambda,
        alpha_important=s.decay_alpha_important,
        alpha_normal=s.decay_alpha_normal,
        threshold=s.archive_threshold * (1 + 1e-6) + 1e-12,
        deleted_before=now - timedelta(days=s.deleted_retention_days) + slack,
        archived_before=now - timedelta(days=s.archived_retention_days) + slack,
    )
    out: dict[UserKey, list[Planned]] = defaultdict(list)
    pages = rt.memories.due_rows(due, MemoryFilter.of(tenant, users), page_size, pause_s)
    for rows in pages:
        for row in decode_rows(rows, lambda r: ScanRow.of(r, rt.memories.tags_of)):
            planned = plan_memory(row, now, s)
            if planned is not None:
                out[UserKey(row.tenant_id, row.user_id)].append(planned)
    return dict(out)


def run_pass(
    rt: Runtime,
    now: datetime,
    via: Via,
    users: Iterable[int] | None = None,
    chunk: int = 200,
    reconcile_grace_s: float = RECONCILE_GRACE_S,
    page_size: int = 5000,
    pause_s: float = 0.0,
    tenant: str | None = None,
) -> PassSummary:
    """Reconcile, then plan and apply at ``now``; returns what was done. Every tenant's
    users, or only ``tenant``'s (an admin key's pass); ``users`` narrows further.

    Summary: ``users`` (with something due), ``archived`` (decayed below the threshold),
    ``expired`` (archived at ``expire_at``), ``purged`` (with ``purged_deleted`` /
    ``purged_archived``), ``sanitized_changes`` (change-log rows blanked), ``consolidated``
    and ``consolidated_members`` (see ``highwater``), ``failed_commands``
    (refused, or no answer within the via's timeout: applied later or at the next pass),
    ``reconciled`` (see ``reconcile``), ``now`` and ``took_s``.
    """
    started = time.monotonic()
    now = require_aware(now, "now")
    # one trace per pass, a span per stage: counts and timings only (docs/operations.md#traces)
    with tracing.span("lifecycle.pass", users_given=users is not None) as sp:
        summary = _run(rt, now, via, users, chunk, reconcile_grace_s, page_size, pause_s, tenant)
        summary["took_s"] = round(time.monotonic() - started, 3)
        if sp is not None:
            sp.set_attributes(_counts(summary))
    log.info("lifecycle pass", extra={"fields": summary})
    return summary


def _run(
    rt: Runtime,
    now: datetime,
    via: Via,
    users: Iterable[int] | None,
    chunk: int,
    reconcile_grace_s: float,
    page_size: int,
    pause_s: float,
    tenant: str | None,
) -> PassSummary:
    wanted = None if users is None else sorted(set(users))
    with tracing.span("lifecycle.reconcile"):
        repaired = reconcile(rt, wanted, reconcile_grace_s, pause_s=pause_s, tenant=tenant)
        tracing.annotate(**repaired)
    with tracing.span("lifecycle.plan"):  # decay, expiry and the purges: what is due
        plans = plan_pass(rt, now, wanted, page_size, pause_s, tenant)
        tracing.annotate(users=len(plans), due=sum(len(ops) for ops in plans.values()))
    pass_id = f"lifecycle@{now.isoformat()}"
    commands = [  # a user with a huge archive gets several commands, each a small message
        lifecycle_command(user, now, pass_id, [p.memory_id for p in ops[i : i + MAX_IDS]])
        for user, ops in sorted(plans.items())
        for i in range(0, len(ops), MAX_IDS)
    ]
    # after the user's archives (same key, so applied in order): merge crowded scopes
    with tracing.span("lifecycle.crowded"):  # the users to consolidate
        crowded = crowded_users(rt, wanted, tenant)
        tracing.annotate(users=len(crowded))
    commands += [consolidate_command(u, now, pass_id) for u in crowded]
    done = {a.value: 0 for a in Action}
    purged: list[str] = []
    failed = merged = members = 0
    # the commands carry this span's traceparent: the writer's spans join the pass's trace
    with tracing.span("lifecycle.apply", commands=len(commands), chunk=chunk):
        for start in range(0, len(commands), chunk):
            for result in via(commands[start : start + chunk]):
                if result is None or result.get("code", 0) != 0:
                    failed += 1
                    continue
                data = result.get("data") or {}
                merged += len(_ids(data, "merged"))
                members += _count(data, "members")
                for action in Action:
                    done[action.value] += len(_ids(data, action.value))
                purged += _ids(data, Action.PURGE_DELETED.value)
                purged += _ids(data, Action.PURGE_ARCHIVED.value)
        tracing.annotate(failed_commands=failed)
    with tracing.span("lifecycle.sanitize", purged=len(purged)):  # the purged's change rows
        sanitized = rt.memories.sanitized_changes(purged)
        tracing.annotate(sanitized_changes=sanitized)
    return {
        "now": now.isoformat(),
        "users": len(plans),
        "archived": done[Action.DECAYED.value],  # decayed below the threshold
        "expired": done[Action.EXPIRED.value],  # archived because expire_at passed
        "purged": len(purged),
        "purged_deleted": done[Action.PURGE_DELETED.value],
        "purged_archived": done[Action.PURGE_ARCHIVED.value],
        "sanitized_changes": sanitized,
        "consolidated": merged,  # merged memories made in scopes above the high-water mark
        "consolidated_members": members,  # memories they superseded
        "failed_commands": failed,
        "reconciled": repaired,
        "took_s": 0.0,  # set by run_pass
    }


def _counts(summary: PassSummary) -> dict[str, int | float]:
    """A pass's summary as span attributes: its counts (``reconciled.*`` flattened)."""
    out: dict[str, int | float] = {}
    for key, value in summary.items():
        if isinstance(value, dict):
            out.update({f"reconciled.{k}": v for k, v in value.items()})
        elif isinstance(value, int | float):
            out[key] = value
    return out


def _ids(data: Mapping[str, object], key: str) -> list[str]:
    """The memory ids a handler's answer lists under ``key`` (none when absent)."""
    found = data.get(key)
    return [str(i) for i in found] if isinstance(found, list) else []


def _count(data: Mapping[str, object], key: str) -> int:
    found = data.get(key)
    return found if isinstance(found, int) else 0
