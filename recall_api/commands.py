"""Send a management command through `memory.commands` and wait for the keyed writer.

The wait is bounded by ``write_timeout_s``. The command id is derived from the caller's
``request_id`` scoped by (tenant, caller, user, op) (``recall_api.idempotency``), so a
caller that timed out may resend the same ``request_id`` without writing twice, a reused
id with another request answers 40901, and two apps' ids never meet.

A route builds its op's payload model (``memstream.schemas.payloads``); the command carries
:func:`wire`, the JSON the writer's handler reads back into the same model, and the
request's fingerprint hashes that same JSON.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Protocol

from core import tracing
from memstream.schemas.commands import Command, result_key
from memstream.schemas.errors import ErrorCode
from memstream.schemas.events import TOPIC_COMMANDS
from memstream.schemas.items import ItemPutPayload
from memstream.schemas.json_types import JsonObject
from memstream.schemas.payloads import (
    DeletePayload,
    EntitiesBackfillPayload,
    EntityUpdatePayload,
    SessionClosePayload,
    StructuredFields,
    UpdatePayload,
)
from memstream.schemas.users import ResolvePayload
from recall_api.access import Caller
from recall_api.errors import ApiError, is_outage, unavailable
from recall_api.idempotency import (
    Idempotency,
    caller_identity,
    fingerprint,
    new_request_id,
    scoped_id,
)
from sinks.sealed import SEALED_COMMAND_OPS, seal_payload
from sinks.services import Services

# what the API sends through memory.commands, one model per op
CommandPayload = (
    StructuredFields
    | UpdatePayload
    | DeletePayload
    | SessionClosePayload
    | EntityUpdatePayload
    | EntitiesBackfillPayload
    | ResolvePayload
    | ItemPutPayload
)


def wire(payload: CommandPayload) -> JsonObject:
    """The payload as the command carries it: the keys the route set (``update``'s
    ``expire_at``: null only when asked to clear it), by their wire names (an access's
    ``global``), as JSON."""
    return payload.model_dump(mode="json", by_alias=True, exclude_unset=True)


class ForUser(Protocol):
    """A route's request body as its command reads it: whose memories, and the caller's
    ``request_id`` (None: the API makes one)."""

    @property
    def user_id(self) -> int: ...

    @property
    def request_id(self) -> str | None: ...


async def send(
    svc: Services,
    caller: Caller,
    op: str,
    body: ForUser,
    payload: CommandPayload,
    endpoint: str | None = None,
) -> JsonObject:
    """:func:`run_command` as a route sends it: for the body's user and request id, in
    the caller's tenant, ``request_id`` owned by the caller."""
    user, request_id, tenant = body.user_id, body.request_id, caller.tenant
    return await run_command(
        svc, op, user, payload, request_id, tenant=tenant, caller=caller, endpoint=endpoint
    )


async def run_command(
    svc: Services,
    op: str,
    user_id: int,
    payload: CommandPayload,
    request_id: str | None = None,
    timeout_s: float | None = None,
    *,
    tenant: str,
    caller: Caller | None = None,
    endpoint: str | None = None,
) -> JsonObject:
    """The writer's answer (``data``) to ``op`` with ``payload``. ``tenant``: the caller's;
    the command, its sealed payload and its result key carry it. ``caller``: who owns
    ``request_id`` (its key, else the payload's ``app_id``); ``endpoint``: the route, when
    it is not ``op``.

    One span, ``memstream.<endpoint>`` (``user_id``, ``op``, ``command_id``, an error's
    ``code``), holds the send and the wait; the command's record carries its W3C
    ``traceparent``, so the writer's ``ingest.command`` continues the trace
    (docs/operations.md#traces)."""
    name = "memstream." + (endpoint or op).replace("/", ".")
    with tracing.span(name, tracing.SERVER, user_id=user_id, op=op):
        try:
            return await _run_command(
                svc, op, user_id, payload, request_id, timeout_s, tenant, caller, endpoint
            )
        except ApiError as exc:
            tracing.annotate(code=int(exc.code))
            raise


async def _run_command(
    svc: Services,
    op: str,
    user_id: int,
    payload: CommandPayload,
    request_id: str | None,
    timeout_s: float | None,
    tenant: str,
    caller: Caller | None,
    endpoint: str | None,
) -> JsonObject:
    timeout_s = svc.settings.write_timeout_s if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    request_id = request_id or new_request_id()
    scoped_app = (
        payload.app_id
        if isinstance(payload, StructuredFields | SessionClosePayload | ItemPutPayload)
        else None
    )
    who = caller_identity(caller.kid if caller else "", scoped_app)
    endpoint = endpoint or op
    command_id = scoped_id("c_", tenant, who, user_id, endpoint, request_id)
    tracing.annotate(command_id=command_id)
    body = wire(payload)
    fp = fingerprint(endpoint, user_id, body)
    record = Idempotency(svc.stores.redis.client, tenant, command_id, fp)
    cmd = Command(
        op=op,
        command_id=command_id,
        tenant_id=tenant,
        user_id=user_id,
        payload=body,
        at=datetime.now(UTC),
    )
    if op in SEALED_COMMAND_OPS:  # the user's words travel sealed with the user's key
        sealed = seal_payload(svc.memories.cipher, user_id, body, tenant)
        cmd = cmd.model_copy(update={"payload": {}, "sealed": sealed})
    bus = svc.stores.kafka
    result: JsonObject | None
    try:
        first = await asyncio.to_thread(record.claim)  # 40901 for another request
        if first is not None:  # answered before: the same answer, nothing sent
            result = first
        else:
            bus.produce_json(
                bus.topic(TOPIC_COMMANDS),
                str(user_id),
                cmd.model_dump(mode="json"),
                headers=tracing.headers(),  # the writer's span continues this trace
            )
            result = await asyncio.to_thread(_wait, svc, cmd.result_id, deadline)
            if result is not None:
                await asyncio.to_thread(record.remember, result)
    except Exception as exc:
        if not is_outage(exc):
            raise
        # the command may be on its way to the writer: say how to retry without a twin
        raise unavailable("a store or the broker", request_id) from exc
    if result is None:
        raise ApiError(
            ErrorCode.UNAVAILABLE,
            f"the writer did not answer within {timeout_s:.0f}s; retry with "
            f"request_id={request_id} (idempotent)",
            {"request_id": request_id},
        )
    code = result.get("code", 0)
    if code != 0:
        known = ErrorCode(code) if isinstance(code, int) else ErrorCode.INTERNAL
        raise ApiError(known, str(result.get("msg", "command failed")))
    data = result.get("data")
    if not isinstance(data, dict):  # every handler answers an object
        raise ApiError(ErrorCode.INTERNAL, f"the writer answered {op} without data")
    return data


def _wait(svc: Services, result_id: str, deadline: float) -> JsonObject | None:
    client = svc.stores.redis.client
    key = result_key(result_id)
    while (left := deadline - time.monotonic()) > 0:
        got = client.blpop(
            [key], timeout=min(0.3, max(left, 0.01))
        )  # under the socket timeout of the client
        if got is not None:
            return json.loads(got[1])
    return None
