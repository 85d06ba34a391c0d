"""session/close: promote the valuable SESSION memories, drop the rest, maybe a 24 h note."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from recall_api.commands import run_command
from recall_api.deps import CallerDep, ServicesDep
from recall_api.recall import recaller_for
from schemas.events import UserId
from schemas.limits import ScopeId

router = APIRouter(prefix="/memory/v1", tags=["session"])


class SessionCloseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: UserId
    app_id: ScopeId | None = None
    session_id: ScopeId
    promote_ids: list[str] = Field(default_factory=list, max_length=1000)
    pending: StrictBool = False
    request_id: str | None = Field(default=None, min_length=1, max_length=128)


@router.post("/session/close")
async def close(
    body: SessionCloseRequest, svc: ServicesDep, caller: CallerDep, request: Request
) -> dict[str, Any]:
    caller.check_write_scope("SESSION", body.app_id)
    payload = body.model_dump(mode="json", exclude={"user_id", "request_id"}, exclude_none=True)
    data = await run_command(
        svc,
        "session_close",
        body.user_id,
        payload,
        body.request_id,
        tenant=caller.tenant,
        caller=caller,
    )
    # applied: the next session's first recall finds the user loaded
    recaller_for(request.app.state, svc).prefetch(body.user_id, caller.tenant)
    return {"code": 0, "msg": "ok", "data": data}
