"""Send a management command through `memory.commands` and wait for the keyed writer.

The wait is bounded; the command id doubles as an idempotency key, so a caller that
timed out may resend the same ``request_id`` without writing twice.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from recall_api.errors import ApiError, is_outage, unavailable
from recall_api.services import Services
from schemas.commands import Command, result_key
from schemas.errors import ErrorCode
from schemas.events import TOPIC_COMMANDS
from sinks.sealed import SEALED_COMMAND_OPS, seal_payload


async def run_command(
    svc: Services,
    op: str,
    user_id: int,
    payload: dict[str, Any],
    request_id: str | None = None,
    timeout_s: float = 15.0,
    *,
    tenant: str,
) -> Any:
    """``tenant``: the caller's; the command, its sealed payload and its result key carry it."""
    command_id = request_id or f"cmd_{uuid.uuid4().hex}"
    cmd = Command(
        op=op,
        command_id=command_id,
        tenant_id=tenant,
        user_id=user_id,
        payload=payload,
        at=datetime.now(UTC),
    )
    if op in SEALED_COMMAND_OPS:  # the user's words travel sealed with the user's key
        sealed = seal_payload(svc.memories.cipher, user_id, payload, tenant)
        cmd = cmd.model_copy(update={"payload": {}, "sealed": sealed})
    bus = svc.stores.kafka
    try:
        bus.produce_json(bus.topic(TOPIC_COMMANDS), str(user_id), cmd.model_dump(mode="json"))
        result = await asyncio.to_thread(_wait, svc, cmd.result_id, timeout_s)
    except Exception as exc:
        if not is_outage(exc):
            raise
        # the command may be on its way to the writer: say how to retry without a twin
        raise unavailable("a store or the broker", command_id) from exc
    if result is None:
        raise ApiError(
            ErrorCode.UNAVAILABLE,
            f"the writer did not answer within {timeout_s:.0f}s; retry with "
            f"request_id={command_id} (idempotent)",
            {"request_id": command_id},
        )
    if result.get("code", 0) != 0:
        raise ApiError(ErrorCode(result["code"]), result.get("msg", "command failed"))
    return result.get("data")


def _wait(svc: Services, result_id: str, timeout_s: float) -> dict | None:
    client = svc.stores.redis.client
    key = result_key(result_id)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = client.blpop([key], timeout=0.3)  # under the socket timeout of the client
        if got is not None:
            return json.loads(got[1])
    return None
