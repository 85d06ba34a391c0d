"""Management endpoints: update, delete, batch_delete (writes, through the keyed writer),
history and change_log (reads of ClickHouse)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from recall_api.commands import run_command
from recall_api.deps import CallerDep, ServicesDep
from recall_api.errors import ApiError
from schemas.enums import Level, OpType
from schemas.errors import ErrorCode
from schemas.events import UINT64_MAX
from schemas.limits import Content, CustomTags, QueryTime, ScopeId, StoreTime

router = APIRouter(prefix="/memory/v1", tags=["manage"])
UserId = Field(strict=True, ge=0, le=UINT64_MAX)  # true is not user 1


class UpdateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: int = UserId
    memory_id: str = Field(min_length=1, max_length=64)
    content: Content | None = Field(default=None, min_length=1, max_length=8192)
    is_important: StrictBool | None = None
    expire_at: StoreTime | None = None
    clear_expire_at: StrictBool = False
    custom_tags: CustomTags | None = None
    request_id: str | None = Field(default=None, min_length=1, max_length=128)

    @model_validator(mode="after")
    def _something(self) -> UpdateRequest:
        if (
            self.content is None
            and self.is_important is None
            and self.expire_at is None
            and not self.clear_expire_at
            and self.custom_tags is None
        ):
            raise ValueError(
                "nothing to update: give content, is_important, expire_at or custom_tags"
            )
        return self


class DeleteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: int = UserId
    memory_id: str = Field(min_length=1, max_length=64)
    request_id: str | None = Field(default=None, min_length=1, max_length=128)


class Scope(BaseModel):
    model_config = ConfigDict(extra="forbid")
    app_id: ScopeId | None = None
    level: Level | None = None
    session_id: ScopeId | None = None


class BatchDeleteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: int = UserId
    memory_ids: list[str] | None = Field(default=None, min_length=1, max_length=1000)
    scope: Scope | None = None
    request_id: str | None = Field(default=None, min_length=1, max_length=128)

    @model_validator(mode="after")
    def _one_selector(self) -> BatchDeleteRequest:
        if (self.memory_ids is None) == (self.scope is None):
            raise ValueError("give exactly one of memory_ids or scope")
        return self


class HistoryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: int = UserId
    memory_id: str = Field(min_length=1, max_length=64)


class ChangeLogRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: int = UserId
    app_id: ScopeId | None = None
    level: Level | None = None
    op_types: list[OpType] | None = None
    start: QueryTime | None = None  # clamped to what the store holds (1900..2299)
    end: QueryTime | None = None
    page: int = Field(default=1, ge=1, le=1_000_000)
    page_size: int = Field(default=50, ge=1, le=500)


def _ok(data: Any) -> dict[str, Any]:
    return {"code": 0, "msg": "ok", "data": data}


@router.post("/update")
async def update(body: UpdateRequest, svc: ServicesDep, caller: CallerDep) -> dict[str, Any]:
    """Content and/or meta; a text change re-embeds and re-hashes, meta alone does not."""
    t = caller.tenant
    if caller.is_app:
        caller.writable(svc.memories.get(body.user_id, body.memory_id, tenant=t), body.memory_id)
    payload = body.model_dump(
        mode="json", exclude={"user_id", "request_id", "clear_expire_at"}, exclude_none=True
    )
    if body.clear_expire_at:
        payload["expire_at"] = None
    data = await run_command(
        svc, "update", body.user_id, payload, body.request_id, tenant=t, caller=caller
    )
    return _ok(data)


@router.post("/delete")
async def delete(body: DeleteRequest, svc: ServicesDep, caller: CallerDep) -> dict[str, Any]:
    """Soft delete: gone from recall when this returns; purged after the retention."""
    t = caller.tenant
    payload: dict[str, Any] = {"memory_ids": [body.memory_id]}
    if caller.is_app:
        caller.writable(svc.memories.get(body.user_id, body.memory_id, tenant=t), body.memory_id)
        payload["access"] = caller.access_payload()
    data = await run_command(
        svc, "delete", body.user_id, payload, body.request_id, tenant=t, caller=caller
    )
    return _ok(data)


@router.post("/batch_delete")
async def batch_delete(
    body: BatchDeleteRequest, svc: ServicesDep, caller: CallerDep
) -> dict[str, Any]:
    """One aggregated operation over ids or a scope (app_id / level / session_id).

    An app key deletes only what it may change: named ids it may not see answer 40401,
    ids it may only read 40101; a scope (even an empty one) is narrowed to its apps."""
    if body.scope is not None:
        caller.check_app(body.scope.app_id)
    payload = body.model_dump(mode="json", exclude={"user_id", "request_id"}, exclude_none=True)
    if caller.is_app:
        if body.memory_ids:
            rows = svc.memories.load(body.user_id, memory_ids=body.memory_ids, tenant=caller.tenant)
            found = {r.memory_id: r for r in rows}
            for mid in body.memory_ids:
                if mid in found:
                    caller.writable(found[mid], mid)
        payload["access"] = caller.access_payload()
    data = await run_command(
        svc,
        "delete",
        body.user_id,
        payload,
        body.request_id,
        tenant=caller.tenant,
        caller=caller,
        endpoint="batch_delete",
    )
    return _ok(data)


@router.post("/history")
def history(body: HistoryRequest, svc: ServicesDep, caller: CallerDep) -> dict[str, Any]:
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
    return _ok(
        {
            "memory": current.public(),
            "chain": [r.public() for r in chain],
            "changes": [c.public() for c in changes],
        }
    )


@router.post("/change_log")
def change_log(body: ChangeLogRequest, svc: ServicesDep, caller: CallerDep) -> dict[str, Any]:
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
    return _ok(
        {
            "items": [c.public() for c in rows],
            "total": total,
            "page": body.page,
            "page_size": body.page_size,
            "has_more": body.page * body.page_size < total,
        }
    )
