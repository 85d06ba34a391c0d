"""Write endpoints: add (async, through Kafka), add_structured (sync), task status."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from recall_api.commands import run_command
from recall_api.deps import CallerDep, ServicesDep
from recall_api.errors import OUTAGES, ApiError, unavailable
from recall_api.recall import recaller_for
from recall_api.services import Services
from schemas.commands import StructuredMemory
from schemas.enums import Level, Ownership
from schemas.errors import ErrorCode
from schemas.events import TOPIC_CONVERSATIONS, ConversationEvent, Message, Strategy, UserId
from schemas.limits import ScopeId
from schemas.tenants import scoped
from sinks.errors import StoreUnavailable
from sinks.sealed import seal_event_bytes

router = APIRouter(prefix="/memory/v1", tags=["write"])


class AddRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: UserId
    app_id: ScopeId | None = None
    session_id: ScopeId | None = None
    ownership: Ownership = Ownership.USER
    level: Level | None = None
    messages: list[Message] = Field(min_length=1)
    strategy: Strategy | None = None
    # Resending an add with the same request_id gives the same task (and no second copy).
    request_id: str | None = Field(default=None, min_length=1, max_length=128)


class StructuredRequest(StructuredMemory):
    request_id: str | None = Field(default=None, min_length=1, max_length=128)


def add_task_id(user_id: int, request_id: str, tenant: str) -> str:
    """The task of an add: the same for a resend of the same request (idempotent), and
    another for the same request id of another tenant."""
    raw = scoped(tenant, f"{user_id}:{request_id}")
    return "t_" + hashlib.sha256(raw.encode()).hexdigest()[:24]


def event_bytes(event: ConversationEvent, max_bytes: int) -> bytes:
    """The event as produced; over ``max_bytes`` (the ingest's limit) it is refused here."""
    raw = json.dumps(event.model_dump(mode="json", exclude_none=True), ensure_ascii=False)
    data = raw.encode("utf-8")
    if len(data) > max_bytes:
        raise ApiError(
            ErrorCode.BAD_PARAMETER,
            f"the add is {len(data)} bytes as an event, over max_event_bytes ({max_bytes})",
        )
    return data


def check_switch(svc: Services, user_id: int, app_id: str | None, tenant: str) -> None:
    switches = svc.switches.get(user_id, tenant=tenant)
    if not switches.global_enabled:
        raise ApiError(ErrorCode.SWITCHED_OFF, "memory is switched off for this user")
    if app_id and app_id in switches.disabled_apps:
        raise ApiError(ErrorCode.SWITCHED_OFF, f"memory is switched off for app '{app_id}'")


@router.post("/add")
def add(body: AddRequest, svc: ServicesDep, caller: CallerDep, request: Request) -> dict[str, Any]:
    """Accept turns for extraction; answers at once with a task id to poll."""
    caller.check_write_scope(body.level, body.app_id)
    s = svc.settings
    if len(body.messages) > s.max_turns_per_event:
        raise ApiError(ErrorCode.BAD_PARAMETER, f"at most {s.max_turns_per_event} messages per add")
    for i, m in enumerate(body.messages):
        if len(m.content.encode("utf-8")) > s.max_message_bytes:
            raise ApiError(
                ErrorCode.BAD_PARAMETER,
                f"messages[{i}].content exceeds {s.max_message_bytes} bytes",
            )
    request_id = body.request_id or f"r_{uuid.uuid4().hex}"
    t = caller.tenant
    try:
        event = ConversationEvent(
            task_id=add_task_id(body.user_id, request_id, t),
            tenant_id=t,
            **body.model_dump(exclude_none=True, exclude={"request_id"}),
        )
    except ValidationError as exc:  # the rule broken, not the input (it may be content)
        msg = "; ".join(e["msg"] for e in exc.errors()[:3])
        raise ApiError(ErrorCode.BAD_PARAMETER, msg) from None
    check_switch(svc, body.user_id, body.app_id, t)
    payload = event_bytes(event, s.max_event_bytes)
    # sealed with the user's data key: a purge leaves no readable copy in the topic
    payload = seal_event_bytes(svc.memories.cipher, body.user_id, event.task_id, payload, t)
    tasks, bus = svc.tasks, svc.stores.kafka
    try:
        svc.stores.redis.client.ping()  # the task status must be recordable: say so now
    except OUTAGES as exc:
        raise unavailable("Redis", request_id) from exc
    known = tasks.get(event.task_id, tenant=t)
    if known is not None and known["status"] != "failed":
        return {"code": 0, "msg": "ok", "data": {"task_id": event.task_id, "accepted": True}}
    tasks.accepted(event.task_id, body.user_id, tenant=t, app_id=body.app_id, kid=caller.kid)

    def delivered(err, _msg) -> None:
        if err is not None:
            from sinks.tasks import TaskResult

            tasks.finish(
                [
                    TaskResult(
                        event.task_id,
                        body.user_id,
                        failed=True,
                        code=int(ErrorCode.UNAVAILABLE),
                        reason=f"could not hand over to Kafka: {err}",
                        tenant_id=t,
                    )
                ]
            )

    try:
        bus.produce_json(
            bus.topic(TOPIC_CONVERSATIONS), str(body.user_id), payload, on_delivery=delivered
        )
    except StoreUnavailable as exc:  # not queued: nothing will land
        delivered(exc, None)
        raise unavailable("Kafka", request_id) from exc
    recaller_for(request.app.state, svc).prefetch(body.user_id, t)  # a recall tends to follow
    return {"code": 0, "msg": "ok", "data": {"task_id": event.task_id, "accepted": True}}


@router.post("/add_structured")
async def add_structured(
    body: StructuredRequest, svc: ServicesDep, caller: CallerDep
) -> dict[str, Any]:
    """Write one memory directly (no extraction, no evolution); answers once durable."""
    caller.check_write_scope(body.level, body.app_id)
    check_switch(svc, body.user_id, body.app_id, caller.tenant)
    payload = body.model_dump(mode="json", exclude={"request_id", "user_id"}, exclude_none=True)
    data = await run_command(
        svc, "add_structured", body.user_id, payload, body.request_id, tenant=caller.tenant
    )
    return {"code": 0, "msg": "ok", "data": data}


@router.get("/tasks/{task_id}")
def task_status(task_id: str, svc: ServicesDep, caller: CallerDep) -> dict[str, Any]:
    found = svc.tasks.get(task_id, tenant=caller.tenant)
    if found is None and not svc.stores.redis.ping():  # unknown, or only unreadable now?
        raise unavailable("Redis (task status)")
    if found is None or not caller.may_see_task(found):
        raise ApiError(ErrorCode.NOT_FOUND, f"unknown task '{task_id}' (or its status expired)")
    return {"code": 0, "msg": "ok", "data": found}
