"""Management endpoints: update, delete, batch_delete (writes, through the keyed writer),
history and change_log (reads of ClickHouse)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from memstream.schemas.api import Envelope
from memstream.schemas.errors import ErrorCode
from memstream.schemas.payloads import DeletePayload, UpdatePayload
from memstream.schemas.requests import (
    BatchDeleteRequest,
    ChangeLogRequest,
    DeleteRequest,
    HistoryRequest,
    UpdateRequest,
)
from memstream.schemas.responses import Change, ChangeLogPage, Deleted, History, Memory, Updated
from recall_api.commands import send
from recall_api.deps import CallerDep, ServicesDep
from recall_api.errors import ApiError, ok

router = APIRouter(prefix="/memory/v1", tags=["manage"])


@router.post("/update", response_model=Envelope[Updated])
async def update(body: UpdateRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """Content and/or meta; a text change re-embeds and re-hashes, meta alone does not."""
    t = caller.tenant
    if caller.is_app:
        caller.writable(svc.memories.get(body.user_id, body.memory_id, tenant=t), body.memory_id)
    fields = body.model_dump(
        exclude={"user_id", "request_id", "clear_expire_at"}, exclude_none=True
    )
    if body.clear_expire_at:
        fields["expire_at"] = None  # present and null: cleared
    payload = UpdatePayload.model_validate(fields)
    data = await send(svc, caller, "update", body, payload)
    return ok(Updated.model_validate(data))


@router.post("/delete", response_model=Envelope[Deleted])
async def delete(body: DeleteRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """Soft delete: gone from recall when this returns; purged after the retention."""
    t = caller.tenant
    if caller.is_app:
        caller.writable(svc.memories.get(body.user_id, body.memory_id, tenant=t), body.memory_id)
    payload = caller.narrow(DeletePayload(memory_ids=[body.memory_id]))
    data = await send(svc, caller, "delete", body, payload)
    return ok(Deleted.model_validate(data))


@router.post("/batch_delete", response_model=Envelope[Deleted])
async def batch_delete(body: BatchDeleteRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """One aggregated operation over ids or a scope (app_id / level / session_id).

    An app key deletes only what it may change: named ids it may not see answer 40401,
    ids it may only read 40101; a scope (even an empty one) is narrowed to its apps."""
    if body.scope is not None:
        caller.check_app(body.scope.app_id)
    if caller.is_app and body.memory_ids:
        rows = svc.memories.load(body.user_id, memory_ids=body.memory_ids, tenant=caller.tenant)
        found = {r.memory_id: r for r in rows}
        for mid in body.memory_ids:
            if mid in found:
                caller.writable(found[mid], mid)
    selector = body.model_dump(exclude={"user_id", "request_id"}, exclude_none=True)
    payload = caller.narrow(DeletePayload.model_validate(selector))
    data = await send(svc, caller, "delete", body, payload, endpoint="batch_delete")
    return ok(Deleted.model_validate(data))


@router.post("/history", response_model=Envelope[History])
def history(body: HistoryRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """The memory's whole chain: what it superseded, what superseded it, every change."""
    mem, t = svc.memories, caller.tenant
    current = mem.get(body.user_id, body.memory_id, tenant=t)
    if current is None or not caller.can_read(current):
        raise ApiError(ErrorCode.NOT_FOUND, f"memory '{body.memory_id}' not found")
    everything = {r.memory_id: r for r in caller.visible(mem.load(body.user_id, tenant=t))}
    chain = [current]
    back = {r.superseded_by: r for r in everything.values() if r.superseded_by}
    while chain[0].memory_id in back and back[chain[0].memory_id] not in chain:
        chain.insert(0, back[chain[0].memory_id])
    while (
        chain[-1].superseded_by in everything and everything[chain[-1].superseded_by] not in chain
    ):
        chain.append(everything[chain[-1].superseded_by])
    changes, _ = svc.changelog.query(
        body.user_id,
        tenant=t,
        memory_ids=[r.memory_id for r in chain],
        visible_apps=caller.app_ids,
        limit=10_000,
    )
    return ok(
        History(
            memory=Memory.of(current),
            chain=[Memory.of(r) for r in chain],
            changes=[Change.of(c) for c in changes],
        )
    )


@router.post("/change_log", response_model=Envelope[ChangeLogPage])
def change_log(body: ChangeLogRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """One page of the user's changes; an app key sees its apps' rows and GLOBAL ones."""
    caller.check_app(body.app_id)
    rows, total = svc.changelog.query(
        body.user_id,
        tenant=caller.tenant,
        app_id=body.app_id,
        visible_apps=caller.app_ids,
        level=body.level,
        op_types=body.op_types,
        start=body.start,
        end=body.end,
        limit=body.page_size,
        offset=(body.page - 1) * body.page_size,
    )
    return ok(
        ChangeLogPage(
            items=[Change.of(c) for c in rows],
            total=total,
            page=body.page,
            page_size=body.page_size,
            has_more=body.page * body.page_size < total,
        )
    )
