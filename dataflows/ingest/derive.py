"""The writer keeps each user's stored profiles current (docs/architecture.md#the-profile).

Before a sink batch is written (``dataflows.ingest.sink``: once per batch, not once per
input: a plan of 150 memories costs ~7 ms), every user whose memories it changed (a
change row of another op than NONE) gets each scope's profile planned again from the
hot index
(``core.derived.next_profile``: a plan is remembered per the memories as they are, so an
unchanged scope costs a lookup) and a new version written in the same batch when it
reads differently. The batch is durable before the call that caused it returns, so a
deleted, superseded or purged memory is out of every profile by then.

The profiles a user holds are read once per hot index from ClickHouse and followed from
then on (``UserIndex.derived``), so a replay finds its own earlier versions and writes
nothing twice. A user's or admin's delete of a memory also blanks the words of every
profile version whose change row cites it (``WriteBatch.sanitize_cited``); an eviction's
delete waits for the physical purge, as the memory's own rows do.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from core.derived import (
    PLAN_TAG,
    STORED_CHARS,
    cited,
    is_derived,
    is_profile_id,
    next_profile,
    plan_of,
    profile_id,
    scopes,
    summarized,
)
from core.kv_items import is_item_id
from core.user_index import UserIndex
from core.write_batch import WriteBatch
from dataflows.ingest.commands import handler
from dataflows.ingest.items import Applied
from dataflows.ingest.recorder import Recorder
from dataflows.ingest.writer import Writer
from dataflows.runtime import Runtime
from memstream.schemas.commands import Command
from memstream.schemas.enums import (
    APART_TYPES,
    DERIVED_TYPES,
    KEYED_TYPES,
    MemType,
    OpSource,
    OpType,
    Status,
)
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.payloads import ProfileSummaryPayload
from memstream.schemas.tenants import UserKey
from models.profile_summary import PLAN, summary_or_plan

PROFILE_SUMMARY_OP = "profile_summary"
QUIET = frozenset({OpType.NONE})
_READ = [t for t in MemType if t not in KEYED_TYPES]  # the memories and the profiles
BLANKING = frozenset({OpSource.USER, OpSource.ADMIN})


def derive(rt: Runtime, batch: WriteBatch, now: datetime) -> None:
    """Add to ``batch`` the profile versions its changes call for (module docstring).
    Each user's versions are caused by the first input of theirs the batch holds."""
    users: dict[UserKey, str] = {}
    for c in batch.changes:
        if c.op_type not in QUIET and not _apart(c.memory_id):
            users.setdefault(UserKey(c.tenant_id, c.user_id), c.task_id)
    gone = [
        (UserKey(c.tenant_id, c.user_id), c.memory_id)
        for c in batch.changes
        if c.op_type is OpType.DELETE and c.op_source in BLANKING and not _apart(c.memory_id)
    ]
    for user, cause in users.items():
        idx = rt.cache.peek(user.user_id, tenant=user.tenant)
        if idx is None:  # a user the handler did not hold (a lifecycle pass): not loaded
            _derive(rt, None, user, batch, cause, now)
            continue
        with idx.lock:
            _derive(rt, idx, user, batch, cause, now)
    batch.sanitize_cited.extend(gone)


def _derive(
    rt: Runtime,
    idx: UserIndex | None,
    user: UserKey,
    batch: WriteBatch,
    cause: str,
    now: datetime,
) -> None:
    """``idx``: the user's held index (under its lock), or None to read the stores. Either
    way the batch's own versions are laid over what is read: a handler that wrote through
    another index (a lifecycle pass's) has not changed the held one, and the stores have
    none of this batch yet."""
    if idx is not None:
        held = _held(rt, idx, user)
        base = {r.memory_id: r for r in idx.records.values()}
    else:
        rows = rt.memories.load(
            user.user_id, statuses=[Status.ACTIVE], mem_types=_READ, tenant=user.tenant
        )
        held = {r.memory_id: r for r in rows if is_derived(r)}
        base = {r.memory_id: r for r in rows if r.mem_type not in APART_TYPES}
    mine = [m for m in batch.memories if UserKey(m.tenant_id, m.user_id) == user]
    for rec in mine:
        if is_derived(rec):  # the batch's own versions of them (a purge's)
            held[rec.memory_id] = rec
        elif rec.mem_type in KEYED_TYPES:  # an item never feeds a profile
            continue
        elif rec.status is Status.ACTIVE and rec.invalid_at is None:
            base[rec.memory_id] = rec
        else:
            base.pop(rec.memory_id, None)
    records = list(base.values())
    have = scopes(records)  # an app without memories of its own has no profile of its own
    wanted = have | {r.app_id for r in held.values() if r.status is Status.ACTIVE}
    rc = Recorder(batch, now, cause)
    for app_id in sorted(wanted, key=lambda a: a or ""):
        pid = profile_id(user.tenant, user.user_id, app_id)
        old = held.get(pid)
        source = records if app_id in have else []
        new = next_profile(source, app_id, old, tenant=user.tenant, user_id=user.user_id, now=now)
        if new is None:
            continue
        new = _blank(new)
        rc.derive(old, new, _reason(app_id, old, new))
        held[pid] = new
        if new.status is Status.ACTIVE and rt.llm.name != "rules":
            payload = ProfileSummaryPayload(app_id=app_id, plan=new.content_hash)
            batch.followups.append(
                Command.new(PROFILE_SUMMARY_OP, "ps", user.user_id, payload, user.tenant)
            )


def _apart(memory_id: str) -> bool:
    """A profile's or an item's change: neither feeds a profile."""
    return is_profile_id(memory_id) or is_item_id(memory_id)


def _held(rt: Runtime, idx: UserIndex, user: UserKey) -> dict[str, MemoryRecord]:
    if idx.derived is None:
        rows = rt.memories.load(
            user.user_id, statuses=[Status.ACTIVE], mem_types=DERIVED_TYPES, tenant=user.tenant
        )
        idx.derived = {r.memory_id: r for r in rows}
    return idx.derived


def _blank(rec: MemoryRecord) -> MemoryRecord:
    """A retired profile keeps none of the words (it is derived: nothing to restore)."""
    if rec.status is Status.ACTIVE:
        return rec
    return dataclasses.replace(
        rec, content="", custom_tags={}, source_msg_ids=[], source_msg_id=None, entities=[]
    )


def _reason(app_id: str | None, old: MemoryRecord | None, new: MemoryRecord) -> str:
    """Names the scope and every memory either version cites: the change row a later
    delete of one of them blanks (``WriteBatch.sanitize_cited``)."""
    ids = list(dict.fromkeys([*(cited(old) if old else []), *cited(new)]))
    scope = f"app {app_id}" if app_id else "GLOBAL"
    return f"profile of {scope}; cites {' '.join(ids)}" if ids else f"profile of {scope}"


@handler(PROFILE_SUMMARY_OP, ProfileSummaryPayload)
def summarize(writer: Writer, cmd: Command, p: ProfileSummaryPayload, now: datetime) -> Applied:
    """The LLM's summary of a scope's profile, when it is still the plan ``p.plan``
    (a later change wrote another plan and asked again). The model is asked outside the
    index lock; the summary is written only when the plan is still the stored one, and
    only when it passed ``models.profile_summary``'s check (else the plan stays)."""
    rt, user = writer.rt, UserKey(cmd.tenant_id, cmd.user_id)
    pid = profile_id(user.tenant, user.user_id, p.app_id)
    idx = rt.cache.get(user.user_id, tenant=user.tenant)
    with idx.lock:
        held = _held(rt, idx, user).get(pid)
        if not _is_plan(held, p.plan):
            return Applied(WriteBatch())
        records = list(idx.records.values())
    items, how = summary_or_plan(rt.llm, plan_of(records, p.app_id, now), STORED_CHARS)
    batch = WriteBatch()
    if how == PLAN or how.startswith(f"{PLAN},"):
        return Applied(batch)
    with idx.lock:
        held = _held(rt, idx, user).get(pid)
        if held is None or not _is_plan(held, p.plan):
            return Applied(batch)
        rec = summarized(held, items, records, now)
        Recorder(batch, now, cmd.command_id, idx).derive(
            held, rec, f"{how}; {_reason(p.app_id, held, rec)}"
        )
        _held(rt, idx, user)[pid] = rec
    return Applied(batch)


def _is_plan(held: MemoryRecord | None, plan: str) -> bool:
    """Is ``held`` the ACTIVE plan ``plan`` names (not a summary, not another plan)?"""
    return (
        held is not None
        and held.status is Status.ACTIVE
        and held.content_hash == plan
        and PLAN_TAG not in held.custom_tags
    )
