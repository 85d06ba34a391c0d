"""Management commands applied by the keyed writer (``memory.commands``).

Each handler returns the WriteBatch to make durable and the result the waiting API
call receives. Handlers are registered by op name; an unknown op is rejected to the DLQ.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from core import tracing
from core.capacity import important_blocked
from core.hashing import content_hash, stable_id
from core.weights import initial_weight
from core.write_batch import WriteBatch
from dataflows.ingest.entities import declared_types, linked
from dataflows.ingest.items import Applied, CommandResult, IncomingCommand, Rejected
from dataflows.ingest.recorder import Recorder
from dataflows.ingest.writer import Writer, counters_of, duplicate_scope
from memstream.schemas.commands import Command
from memstream.schemas.enums import Level, OpSource
from memstream.schemas.errors import ErrorCode
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.payloads import StructuredFields
from memstream.schemas.tenants import id_parts
from sinks.tasks import TaskResult

P = TypeVar("P", bound=BaseModel)
# (writer, command, its payload validated, wall clock) -> what to write and answer
Handler = Callable[[Writer, Command, P, datetime], Applied]


@dataclass(frozen=True)
class Registered(Generic[P]):
    payload: type[P]
    apply: Handler[P]


HANDLERS: dict[str, Registered[Any]] = {}


def handler(op: str, payload: type[P]) -> Callable[[Handler[P]], Handler[P]]:
    """Register ``fn`` for ``op``; its payload is validated with ``payload`` first."""

    def register(fn: Handler[P]) -> Handler[P]:
        HANDLERS[op] = Registered(payload, fn)
        return fn

    return register


def apply_command(writer: Writer, item: IncomingCommand, now: datetime | None = None) -> Applied:
    """Apply one command: its handler's batch and answer. Every op is one span,
    ``ingest.command`` (its op, user, the answer's code, the memories written), under
    the current one: the flow's ``ingest.write``, which continues the trace of the
    record's ``traceparent`` (the API request's, or a lifecycle pass's), or a pass's
    stage when applied in-process (docs/operations.md#traces)."""
    cmd = item.command
    op = cmd.op if cmd.op in HANDLERS else "unknown"  # a stray op's name is not echoed
    with tracing.span("ingest.command", op=op, user_id=cmd.user_id) as sp:
        applied = _apply(writer, item, now or datetime.now(UTC))
        if sp is not None:
            codes = [int(r.get("code", 0)) for _, r in applied.command_results]
            sp.set_attributes(
                {"code": codes[0] if codes else 0, "memories": len(applied.batch.memories)}
            )
        return applied


def _apply(writer: Writer, item: IncomingCommand, now: datetime) -> Applied:
    cmd = item.command
    entry = HANDLERS.get(cmd.op)
    if entry is None:
        reason = f"unknown command op '{cmd.op}'"
        return Applied(
            WriteBatch(),
            command_results=[(cmd.result_id, error(ErrorCode.BAD_PARAMETER, reason))],
            rejected=[Rejected(reason, item.source)],
        )
    try:
        payload = entry.payload.model_validate(cmd.payload)
    except ValidationError as exc:
        return _bad_payload(item, exc)
    applied = entry.apply(writer, cmd, payload, now)
    if cmd.result_id != cmd.command_id:  # another tenant's: its result key is scoped
        applied.command_results = [
            (cmd.result_id if cid == cmd.command_id else cid, res)
            for cid, res in applied.command_results
        ]
    return applied


def _bad_payload(item: IncomingCommand, exc: ValidationError) -> Applied:
    """A payload its op's model refuses: the caller is answered 40001 with the reason and
    the command goes to the DLQ. The reason names the field, never its value."""
    cmd = item.command
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "payload"
    reason = f"invalid {cmd.op} payload: {where}: {first['msg']}"
    return Applied(
        WriteBatch(),
        command_results=[(cmd.result_id, error(ErrorCode.BAD_PARAMETER, reason))],
        rejected=[Rejected(reason, item.source, None, cmd.user_id, cmd.tenant_id)],
    )


def error(code: ErrorCode, msg: str) -> CommandResult:
    return {"code": int(code), "msg": msg}


def ok(data: Mapping[str, object]) -> CommandResult:
    return {"code": 0, "msg": "ok", "data": data}


def answer(cmd: Command, batch: WriteBatch, result: CommandResult) -> Applied:
    """What the writer makes durable and the one answer the caller gets."""
    return Applied(batch, command_results=[(cmd.command_id, result)])


@handler("add_structured", StructuredFields)
def add_structured(writer: Writer, cmd: Command, body: StructuredFields, now: datetime) -> Applied:
    level = body.level or (Level.APP if body.app_id else Level.GLOBAL)
    if (level is Level.APP and not body.app_id) or (level is Level.SESSION and not body.session_id):
        needs = "app_id" if level is Level.APP else "session_id"
        return answer(
            cmd, WriteBatch(), error(ErrorCode.BAD_PARAMETER, f"level {level} needs {needs}")
        )
    text = body.content.strip()
    text_hash = content_hash(text)
    memory_id = stable_id("m_", *id_parts(cmd.tenant_id, cmd.user_id, cmd.command_id, 0))
    idx = writer.rt.cache.get(cmd.user_id, tenant=cmd.tenant_id)
    batch = WriteBatch()
    result = TaskResult(cmd.command_id, cmd.user_id, tenant_id=cmd.tenant_id)
    with idx.lock:
        # the command id is scoped by caller and request (recall_api.idempotency): this
        # memory exists only when the same request_id was applied before (Redis lost)
        mine = idx.records.get(memory_id)
        if mine is not None:
            if mine.content_hash == text_hash:
                return answer(cmd, batch, ok({"memory_id": memory_id, "duplicate": False}))
            reused = "request_id reused with another content"
            return answer(cmd, batch, error(ErrorCode.REQUEST_CONFLICT, reused))
        existing = idx.by_hash.find(text_hash, duplicate_scope(level, body.app_id, body.session_id))
        if existing is not None:
            dup = {"memory_id": existing, "duplicate": existing != memory_id}
            return answer(cmd, batch, ok(dup))
        counters = counters_of(idx)
        if body.is_important and important_blocked(
            counters, level, body.app_id, writer.s.for_app(body.app_id)
        ):
            full = "important-mark limit reached for this scope"
            return answer(cmd, batch, error(ErrorCode.IMPORTANT_LIMIT, full))
        rec = MemoryRecord(
            memory_id=memory_id,
            user_id=cmd.user_id,
            tenant_id=cmd.tenant_id,
            content=text,
            content_hash=text_hash,
            level=level,
            ownership=body.ownership,
            mem_type=body.mem_type,
            weight=initial_weight(
                body.ownership,
                body.mem_type,
                writer.s,
                is_important=body.is_important,
                time_bound=body.expire_at is not None,
            ),
            weight_at=now,
            created_at=now,
            updated_at=now,
            valid_at=now,
            app_id=body.app_id,
            session_id=body.session_id if level is Level.SESSION else None,
            is_important=body.is_important,
            expire_at=body.expire_at,
            source_session_id=body.session_id,
            custom_tags=body.custom_tags,
        )
        types = declared_types(writer.s, body.app_id)
        rec, warnings = linked(rec, idx, types)
        rc = Recorder(batch, now, cmd.command_id, idx, counters, result)
        if not writer.admit(rc, rec):
            return answer(cmd, batch, error(ErrorCode.CAPACITY_FULL, result.reason))
        rc.add(rec, writer.rt.embedder.embed([text])[0], "add_structured", source=OpSource.USER)
    added = {"memory_id": memory_id, "duplicate": False, "evicted": result.evicted}
    if warnings:
        added["warnings"] = list(warnings)
    return answer(cmd, batch, ok(added))
