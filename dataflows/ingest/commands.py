"""Management commands applied by the keyed writer (``memory.commands``).

Each handler returns the WriteBatch to make durable and the result the waiting API
call receives. Handlers are registered by op name; an unknown op is rejected to the DLQ.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from pydantic import ValidationError

from core.capacity import important_blocked
from core.hashing import content_hash, stable_id
from core.weights import initial_weight
from core.write_batch import WriteBatch
from dataflows.ingest.items import Applied, IncomingCommand, Rejected
from dataflows.ingest.recorder import Recorder
from dataflows.ingest.writer import Writer, counters_of, duplicate_scope
from schemas.commands import StructuredMemory
from schemas.enums import Level, OpSource
from schemas.errors import ErrorCode
from schemas.memory import MemoryRecord
from schemas.tenants import id_parts
from sinks.tasks import TaskResult

Handler = Callable[[Writer, IncomingCommand, datetime], Applied]
HANDLERS: dict[str, Handler] = {}


def handler(op: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[op] = fn
        return fn

    return register


def apply_command(writer: Writer, item: IncomingCommand, now: datetime | None = None) -> Applied:
    now = now or datetime.now(UTC)
    cmd = item.command
    fn = HANDLERS.get(cmd.op)
    if fn is None:
        reason = f"unknown command op '{cmd.op}'"
        return Applied(
            WriteBatch(),
            command_results=[(cmd.result_id, error(ErrorCode.BAD_PARAMETER, reason))],
            rejected=[Rejected(reason, item.source)],
        )
    applied = fn(writer, item, now)
    if cmd.result_id != cmd.command_id:  # another tenant's: its result key is scoped
        applied.command_results = [
            (cmd.result_id if cid == cmd.command_id else cid, res)
            for cid, res in applied.command_results
        ]
    return applied


def error(code: ErrorCode, msg: str) -> dict:
    return {"code": int(code), "msg": msg}


def ok(data: dict) -> dict:
    return {"code": 0, "msg": "ok", "data": data}


@handler("add_structured")
def add_structured(writer: Writer, item: IncomingCommand, now: datetime) -> Applied:
    cmd = item.command
    try:
        body = StructuredMemory.model_validate({**cmd.payload, "user_id": cmd.user_id})
    except ValidationError as exc:
        return Applied(
            WriteBatch(),
            command_results=[
                (cmd.command_id, error(ErrorCode.BAD_PARAMETER, str(exc.errors()[0]["msg"])))
            ],
        )
    level = body.level or (Level.APP if body.app_id else Level.GLOBAL)
    if (level is Level.APP and not body.app_id) or (level is Level.SESSION and not body.session_id):
        return Applied(
            WriteBatch(),
            command_results=[
                (
                    cmd.command_id,
                    error(
                        ErrorCode.BAD_PARAMETER,
                        f"level {level} needs {'app_id' if level is Level.APP else 'session_id'}",
                    ),
                )
            ],
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
            same = mine.content_hash == text_hash
            answer = (
                ok({"memory_id": memory_id, "duplicate": False})
                if same
                else error(ErrorCode.REQUEST_CONFLICT, "request_id reused with another content")
            )
            return Applied(batch, command_results=[(cmd.command_id, answer)])
        existing = idx.by_hash.find(text_hash, duplicate_scope(level, body.app_id, body.session_id))
        if existing is not None:
            return Applied(
                batch,
                command_results=[
                    (
                        cmd.command_id,
                        ok({"memory_id": existing, "duplicate": existing != memory_id}),
                    )
                ],
            )
        counters = counters_of(idx)
        if body.is_important and important_blocked(
            counters, level, body.app_id, writer.s.for_app(body.app_id)
        ):
            return Applied(
                batch,
                command_results=[
                    (
                        cmd.command_id,
                        error(
                            ErrorCode.IMPORTANT_LIMIT, "important-mark limit reached for this scope"
                        ),
                    )
                ],
            )
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
        rc = Recorder(batch, now, cmd.command_id, idx, counters, result)
        if not writer.admit(rc, rec):
            return Applied(
                batch,
                command_results=[(cmd.command_id, error(ErrorCode.CAPACITY_FULL, result.reason))],
            )
        rc.add(rec, writer.rt.embedder.embed([text])[0], "add_structured", source=OpSource.USER)
    return Applied(
        batch,
        command_results=[
            (
                cmd.command_id,
                ok({"memory_id": memory_id, "duplicate": False, "evicted": result.evicted}),
            )
        ],
    )
