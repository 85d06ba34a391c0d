"""Write endpoints: add (async, through Kafka), add_structured (sync), task status."""

from __future__ import annotations

import contextlib
import json
import threading
import time

from confluent_kafka import KafkaError, Message
from fastapi import APIRouter, Response
from pydantic import ValidationError

from core import tracing
from memstream.schemas.api import Envelope
from memstream.schemas.errors import ErrorCode
from memstream.schemas.events import TOPIC_CONVERSATIONS, ConversationEvent
from memstream.schemas.payloads import StructuredFields
from memstream.schemas.requests import AddRequest, StructuredRequest
from memstream.schemas.responses import AddAccepted, StructuredAdded, TaskStatus
from recall_api.commands import send
from recall_api.deps import ApiDep, CallerDep, RecallerDep, ServicesDep
from recall_api.errors import OUTAGES, ApiError, ok, unavailable
from recall_api.idempotency import (
    Idempotency,
    caller_identity,
    fingerprint,
    new_request_id,
    scoped_id,
)
from sinks.errors import StoreUnavailable
from sinks.sealed import seal_event_bytes
from sinks.services import Services
from sinks.tasks import LANDED, TaskResult

router = APIRouter(prefix="/memory/v1", tags=["write"])


def add_task_id(
    user_id: int, request_id: str, tenant: str, identity: str = caller_identity("", None)
) -> str:
    """The task of an add: the same for a resend of the same request (idempotent), and
    another for the same request id of another tenant, caller (``identity``) or user."""
    return scoped_id("t_", tenant, identity, user_id, "add", request_id)


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


@router.post("/add", response_model=Envelope[AddAccepted])
def add(
    body: AddRequest, api: ApiDep, svc: ServicesDep, recaller: RecallerDep, caller: CallerDep
) -> Response:
    """Accept turns for extraction; answers at once with a task id to poll. One trace
    per add: this span, then the flow's steps (``core.tracing``)."""
    with tracing.span(
        "memstream.add", tracing.SERVER, user_id=body.user_id, messages=len(body.messages)
    ):
        return _add(body, api, svc, recaller, caller)


def _add(
    body: AddRequest, api: ApiDep, svc: ServicesDep, recaller: RecallerDep, caller: CallerDep
) -> Response:
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
    if api.ingest_watch.looping():  # accepted now, it would not be stored
        raise ApiError(
            ErrorCode.UNAVAILABLE,
            "the ingest flow is crash-looping (see GET /healthz/ingest): nothing was "
            "accepted; retry later",
        )
    request_id = body.request_id or new_request_id()
    t = caller.tenant
    who = caller_identity(caller.kid, body.app_id)
    fields = body.model_dump(mode="json", exclude_none=True, exclude={"request_id"})
    task_id = add_task_id(body.user_id, request_id, t, who)
    tracing.annotate(task_id=task_id)
    try:
        event = ConversationEvent(
            task_id=task_id,
            tenant_id=t,
            **body.model_dump(exclude_none=True, exclude={"request_id"}),
        )
    except ValidationError as exc:  # the rule broken, not the input (it may be content)
        msg = "; ".join(e["msg"] for e in exc.errors()[:3])
        raise ApiError(ErrorCode.BAD_PARAMETER, msg) from None
    check_switch(svc, body.user_id, body.app_id, t)
    payload = event_bytes(event, s.max_event_bytes)
    # sealed with the user's data key: a purge leaves no readable copy in the topic
    payload = seal_event_bytes(svc.memories.cipher, body.user_id, task_id, payload, t)
    record = Idempotency(
        svc.stores.redis.client, t, task_id, fingerprint("add", body.user_id, fields)
    )
    answer = AddAccepted(task_id=task_id, accepted=True)
    try:  # the task status must be recordable: say so now
        if record.claim() is not None:  # 40901 for another request
            return ok(answer)
        known = svc.tasks.get(task_id, tenant=t)
    except OUTAGES as exc:
        raise unavailable("Redis", request_id) from exc
    if known is not None and known["status"] in LANDED:  # its answer was lost, not its event
        record.remember(answer.model_dump())
        return ok(answer)
    deliver(svc, task_id, body, t, caller.kid, payload, request_id, record, answer)
    recaller.prefetch(body.user_id, t)  # a recall tends to follow
    return ok(answer)


def deliver(
    svc: Services,
    task_id: str,
    body: AddRequest,
    tenant: str,
    kid: str,
    payload: bytes,
    request_id: str,
    record: Idempotency,
    answer: AddAccepted,
) -> None:
    """Produce the event and return once Kafka acknowledged it (acks=all, idempotent
    producer: ``sinks.kafka``), within ``write_timeout_s``; else 50301 with the request
    id. The task reads ``sending`` until then: a resend of an id whose event never
    landed (a crash before the acknowledgement) produces it again."""
    tasks, bus = svc.tasks, svc.stores.kafka
    tasks.accepted(task_id, body.user_id, tenant=tenant, app_id=body.app_id, kid=kid, sending=True)
    acked = threading.Event()
    failure: list[str] = []

    # on whichever thread polls the producer; here too, with the error, when not queued
    def delivered(err: KafkaError | StoreUnavailable | None, _msg: Message | None) -> None:
        if err is not None:
            failure.append(str(err))
            result = TaskResult(
                task_id,
                body.user_id,
                failed=True,
                code=int(ErrorCode.UNAVAILABLE),
                reason=f"could not hand over to Kafka: {err}",
                tenant_id=tenant,
            )
            with contextlib.suppress(*OUTAGES):
                tasks.finish([result])
        else:  # durable in Kafka: from now on the task is the ingest's
            with contextlib.suppress(*OUTAGES):
                tasks.sent(task_id, tenant=tenant)
                record.remember(answer.model_dump())
        acked.set()

    deadline = time.monotonic() + svc.settings.write_timeout_s
    try:
        bus.produce_json(
            bus.topic(TOPIC_CONVERSATIONS),
            str(body.user_id),
            payload,
            headers=tracing.headers(),  # the add's trace goes on in the flow
            on_delivery=delivered,
        )
    except StoreUnavailable as exc:  # not queued: nothing will land
        delivered(exc, None)
        raise unavailable("Kafka", request_id) from exc
    while not acked.is_set() and (left := deadline - time.monotonic()) > 0:
        bus.producer.poll(min(left, 0.05))
    if failure or not acked.is_set():  # refused, or not acknowledged in time
        raise unavailable("Kafka", request_id)


@router.post("/add_structured", response_model=Envelope[StructuredAdded])
async def add_structured(body: StructuredRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """Write one memory directly (no extraction, no evolution); answers once durable."""
    caller.check_write_scope(body.level, body.app_id)
    check_switch(svc, body.user_id, body.app_id, caller.tenant)
    payload = StructuredFields.model_validate(
        body.model_dump(exclude={"request_id", "user_id"}, exclude_none=True)
    )
    data = await send(svc, caller, "add_structured", body, payload)
    return ok(StructuredAdded.model_validate(data))


@router.get("/tasks/{task_id}", response_model=Envelope[TaskStatus])
def task_status(task_id: str, svc: ServicesDep, caller: CallerDep) -> Response:
    found = svc.tasks.get(task_id, tenant=caller.tenant)
    if found is None and not svc.stores.redis.ping():  # unknown, or only unreadable now?
        raise unavailable("Redis (task status)")
    if found is None or not caller.may_see_task(found):
        raise ApiError(ErrorCode.NOT_FOUND, f"unknown task '{task_id}' (or its status expired)")
    return ok(TaskStatus.model_validate(found))
