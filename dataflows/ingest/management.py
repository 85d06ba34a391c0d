"""Management commands of the keyed writer: update, delete, purge, session close.

Each runs inside the user's writer, under the hot index lock, so it is ordered with
every ingest mutation of that user. Memories outside the hot index (archived, deleted)
are read from ClickHouse. Results go back to the waiting API call.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import TypedDict

from core.capacity import important_blocked
from core.delete_scope import DeleteScope, Grant, allowed
from core.derived import is_derived
from core.hashing import content_hash, stable_id
from core.weights import initial_weight
from core.write_batch import WriteBatch
from dataflows.ingest.commands import answer, error, handler, ok
from dataflows.ingest.entities import declared_types, linked
from dataflows.ingest.items import Applied, CommandResult
from dataflows.ingest.recorder import Recorder
from dataflows.ingest.writer import Writer, counters_of
from memstream.schemas.commands import Command
from memstream.schemas.enums import DERIVED_TYPES, KEYED_TYPES, Level, MemType, OpSource, Status
from memstream.schemas.errors import ErrorCode
from memstream.schemas.json_types import JsonObject
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.payloads import Access, DeletePayload, SessionClosePayload, UpdatePayload
from memstream.schemas.tenants import UserKey, id_parts
from sinks.tasks import TaskResult

LIVE = (Status.ACTIVE, Status.ARCHIVED)
OWN_TYPES = [t for t in MemType if t not in DERIVED_TYPES]  # the memories and the items


def _lookup(writer: Writer, cmd: Command, ids: list[str]) -> dict[str, MemoryRecord]:
    """The user's current records for ``ids``: hot index first, ClickHouse for the rest."""
    idx = writer.rt.cache.get(cmd.user_id, tenant=cmd.tenant_id)
    found = {i: idx.records[i] for i in ids if i in idx.records}
    if idx.items is not None:  # an item put in this batch may not be stored yet
        found.update({i: idx.items[i] for i in ids if i in idx.items})
    rest = [i for i in ids if i not in found]
    if rest:
        rows = writer.rt.memories.load(cmd.user_id, memory_ids=rest, tenant=cmd.tenant_id)
        found.update({r.memory_id: r for r in rows})
    return found


class _Changes(TypedDict, total=False):
    """The fields of a ``MemoryRecord`` an update may change."""

    updated_at: datetime
    content: str
    content_hash: str
    weight_at: datetime
    weight: float
    is_important: bool
    expire_at: datetime | None
    custom_tags: JsonObject


@handler("update", UpdatePayload)
def update(writer: Writer, cmd: Command, p: UpdatePayload, now: datetime) -> Applied:
    given = p.model_fields_set  # a key left out keeps its value; expire_at null clears it
    idx = writer.rt.cache.get(cmd.user_id, tenant=cmd.tenant_id)
    with idx.lock:
        old = _lookup(writer, cmd, [p.memory_id]).get(p.memory_id)
        if old is None or old.status not in LIVE:
            missing = error(ErrorCode.NOT_FOUND, f"memory '{p.memory_id}' not found")
            return answer(cmd, WriteBatch(), missing)
        if is_derived(old):
            return answer(cmd, WriteBatch(), _derived_refusal(old))
        if old.mem_type in KEYED_TYPES:
            by_key = f"memory '{old.memory_id}' is a key-value item: use items/put to change it"
            return answer(cmd, WriteBatch(), error(ErrorCode.BAD_PARAMETER, by_key))
        important = old.is_important if p.is_important is None else p.is_important
        changes: _Changes = {"updated_at": now}
        text = (p.content or "").strip()
        if text and text != old.content:
            changes["content"] = text
            changes["content_hash"] = content_hash(text)
            changes["weight_at"] = now
            changes["weight"] = max(
                old.weight,
                initial_weight(old.ownership, old.mem_type, writer.s, is_important=important),
            )
        if p.is_important is not None and p.is_important != old.is_important:
            if (
                p.is_important
                and old.status is Status.ACTIVE
                and important_blocked(
                    counters_of(idx), old.level, old.app_id, writer.s.for_app(old.app_id)
                )
            ):
                full = error(
                    ErrorCode.IMPORTANT_LIMIT, "important-mark limit reached for this scope"
                )
                return answer(cmd, WriteBatch(), full)
            changes["is_important"] = p.is_important
            if p.is_important:
                changes["weight"] = max(
                    changes.get("weight", old.weight), writer.s.weight_important
                )
        if "expire_at" in given:  # None clears it
            changes["expire_at"] = p.expire_at
        if "custom_tags" in given:
            changes["custom_tags"] = dict(p.custom_tags or {})
        rec = dataclasses.replace(old, **changes)
        if "content" in changes:  # the words changed: so may the entities they name
            rec, _ = linked(rec, idx, declared_types(writer.s, rec.app_id))
        vector = writer.rt.embedder.embed([text])[0] if "content" in changes else None
        fields = sorted(k for k in changes if k not in ("updated_at", "content_hash", "weight_at"))
        batch = WriteBatch()
        reason = f"updated: {', '.join(fields)}"
        # no counters: an update admits nothing after it (the important mark is checked above)
        Recorder(batch, now, cmd.command_id, idx).update(
            old, rec, vector, reason, source=OpSource.USER
        )
    updated = {"memory_id": rec.memory_id, "updated": fields, "reembedded": "content" in changes}
    return answer(cmd, batch, ok(updated))


def _select(writer: Writer, cmd: Command, p: DeletePayload) -> list[MemoryRecord]:
    """Memories a delete/purge names: by ids, or by scope (app_id / level / session_id),
    narrowed to what the caller's key may change (``access``, recall_api.access)."""
    if p.memory_ids:
        found = _lookup(writer, cmd, list(p.memory_ids))
        rows = [r for r in found.values() if r.status in (*LIVE, Status.SUPERSEDED)]
        return _allowed(rows, p.access)
    rows = writer.rt.memories.load(  # the user's items too (a purge's, an app's scope)
        cmd.user_id, statuses=[*LIVE, Status.SUPERSEDED], tenant=cmd.tenant_id, mem_types=OWN_TYPES
    )
    # scope and access; the same rule fences the scope's turns still on their way
    # (dataflows.ingest.fence)
    scope = DeleteScope.of(p)
    return [r for r in rows if scope.matches(r.app_id, r.level, r.session_id)]


def _allowed(rows: list[MemoryRecord], access: Access | None) -> list[MemoryRecord]:
    """``access``: an app key's apps and GLOBAL grant; None = everything."""
    if access is None:
        return rows
    grant: Grant = {"apps": access.apps, "global": access.global_grant}
    return [r for r in rows if allowed(r.level, r.app_id, grant)]


@handler("delete", DeletePayload)
def delete(writer: Writer, cmd: Command, p: DeletePayload, now: datetime) -> Applied:
    idx = writer.rt.cache.get(cmd.user_id, tenant=cmd.tenant_id)
    with idx.lock:
        targets = _select(writer, cmd, p)
        derived = next((r for r in targets if is_derived(r)), None)
        if derived is not None:
            return answer(cmd, WriteBatch(), _derived_refusal(derived))
        batch = WriteBatch()
        rc = Recorder(batch, now, cmd.command_id, idx)
        for old in targets:
            rc.delete(old, p.reason or "deleted", source=p.source, shred=p.shred)
        if p.shred:
            stored = writer.rt.memories.ids(cmd.user_id, tenant=cmd.tenant_id)
            rc.shred_user(UserKey(cmd.tenant_id, cmd.user_id), stored)
    asked = list(p.memory_ids or [])
    missing = sorted(set(asked) - {r.memory_id for r in targets})
    if asked and len(asked) == 1 and missing:
        return answer(cmd, batch, error(ErrorCode.NOT_FOUND, f"memory '{asked[0]}' not found"))
    due = now + timedelta(days=writer.s.deleted_retention_days)
    deleted = {
        "deleted": len(targets),
        "memory_ids": [r.memory_id for r in targets],
        "not_found": missing,
        "physical_removal_due": due.isoformat(),
    }
    return answer(cmd, batch, ok(deleted))


def _derived_refusal(rec: MemoryRecord) -> CommandResult:
    """A profile changes with the memories it is derived from, never by hand
    (docs/architecture.md#the-profile)."""
    return error(
        ErrorCode.BAD_PARAMETER,
        f"memory '{rec.memory_id}' is the user's profile, derived from their memories: "
        "update or delete those instead",
    )


@handler("session_close", SessionClosePayload)
def session_close(writer: Writer, cmd: Command, p: SessionClosePayload, now: datetime) -> Applied:
    """Promote the valuable SESSION memories, drop the rest, optionally leave a 24 h note.

    Valuable (rules, whatever the LLM provider): important, recalled at least once, or
    named in ``promote_ids``. Promotion goes to APP when the session has an app, else
    GLOBAL, and is capacity-checked like any new memory.
    """
    sid, app_id = p.session_id, p.app_id
    promote_ids = set(p.promote_ids)
    idx = writer.rt.cache.get(cmd.user_id, tenant=cmd.tenant_id)
    batch = WriteBatch()
    result = TaskResult(cmd.command_id, cmd.user_id, tenant_id=cmd.tenant_id)
    promoted: list[str] = []
    dropped: list[MemoryRecord] = []
    refused: list[str] = []
    with idx.lock:
        rc = Recorder(batch, now, cmd.command_id, idx, counters_of(idx), result)
        session = [
            r
            for r in idx.records.values()
            if r.level is Level.SESSION
            and r.session_id == sid
            and (r.app_id or None) == (app_id or None)
        ]
        target = Level.APP if app_id else Level.GLOBAL
        for old in sorted(session, key=lambda r: r.created_at):
            keep = old.is_important or old.recall_count > 0 or old.memory_id in promote_ids
            if not keep:
                dropped.append(old)
                continue
            rec = dataclasses.replace(old, level=target, session_id=None, updated_at=now)
            reason = f"promoted from session {sid} to {target}"
            if not rc.move(old, rec, reason, lambda moved: writer.admit(rc, moved)):
                refused.append(old.memory_id)
                continue
            promoted.append(rec.memory_id)
        for old in dropped:
            rc.delete(old, f"session {sid} closed; not promoted")
        pending_id = None
        if p.pending and session:
            pending_id = _continuity(writer, rc, session, sid, app_id)
    closed = {
        "promoted": promoted,
        "dropped": [r.memory_id for r in dropped],
        "refused": refused,
        "pending_memory_id": pending_id,
    }
    return answer(cmd, batch, ok(closed))


def _continuity(
    writer: Writer,
    rc: Recorder,
    session: list[MemoryRecord],
    sid: str,
    app_id: str | None,
) -> str:
    """A short-lived EPISODIC memory that lets the next session pick up where this one ended."""
    now, cause = rc.now, rc.cause
    latest = sorted(session, key=lambda r: r.created_at)[-3:]
    text = f"Unfinished session {sid}: " + "; ".join(r.content for r in latest)
    first = session[0]
    rec = MemoryRecord(
        memory_id=stable_id("m_", *id_parts(first.tenant_id, first.user_id, cause, "pending")),
        user_id=first.user_id,
        tenant_id=first.tenant_id,
        content=text,
        content_hash=content_hash(text),
        level=Level.APP if app_id else Level.GLOBAL,
        ownership=first.ownership,
        mem_type=MemType.EPISODIC,
        weight=initial_weight(first.ownership, MemType.EPISODIC, writer.s, time_bound=True),
        weight_at=now,
        created_at=now,
        updated_at=now,
        valid_at=now,
        app_id=app_id,
        expire_at=now + timedelta(hours=writer.s.session_pending_ttl_h),
        source_session_id=sid,
        custom_tags={"continuity": sid},
    )
    rc.add(rec, writer.rt.embedder.embed([text])[0], f"continuity of session {sid}")
    return rec.memory_id
