"""session/close: promote the valuable SESSION memories, drop the rest, maybe a 24 h note."""

from __future__ import annotations

from fastapi import APIRouter, Response

from memstream.schemas.api import Envelope
from memstream.schemas.payloads import SessionClosePayload
from memstream.schemas.requests import SessionCloseRequest
from memstream.schemas.responses import SessionClosed
from recall_api.commands import send
from recall_api.deps import CallerDep, RecallerDep, ServicesDep
from recall_api.errors import ok

router = APIRouter(prefix="/memory/v1", tags=["session"])


@router.post("/session/close", response_model=Envelope[SessionClosed])
async def close(
    body: SessionCloseRequest, svc: ServicesDep, recaller: RecallerDep, caller: CallerDep
) -> Response:
    caller.check_write_scope("SESSION", body.app_id)
    payload = SessionClosePayload.model_validate(
        body.model_dump(exclude={"user_id", "request_id"}, exclude_none=True)
    )
    data = await send(svc, caller, "session_close", body, payload)
    # applied: the next session's first recall finds the user loaded
    recaller.prefetch(body.user_id, caller.tenant)
    return ok(SessionClosed.model_validate(data))
