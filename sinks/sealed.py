"""Sealed Kafka values: what the API produces carries no plaintext of the user's words.

A conversation event the API's ``add`` produces on ``memory.conversations`` travels as
``{"v": 2, "tenant_id", "user_id", "task_id", "sealed"}`` where ``sealed`` is the whole
ConversationEvent (docs/architecture.md#kafka-topics) as JSON, encrypted with the user's
data key; the ingest parser opens it and validates the event inside as if a platform had
produced it. Commands that carry content (``add_structured``, ``update``) put their payload
in ``Command.sealed`` the same way. After a purge destroyed the key, a sealed value left in
a topic (retention, segment files, a mirror, a backup) opens for no one; the ingest sends
one it can no longer open to the DLQ (still sealed) instead of applying it.

Platforms that produce plaintext straight to ``memory.conversations`` are not sealed;
they are covered by that topic's retention (``sinks.topic_config``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memstream.schemas.json_types import JsonObject
from sinks.keyring import DEFAULT_TENANT, KeyRing

SEALED_VERSION = 2
SEALED_COMMAND_OPS = frozenset({"add_structured", "update", "entity_update", "item_put"})


def seal_event(keys: KeyRing, event: dict[str, Any], tenant: str = DEFAULT_TENANT) -> dict:
    user_id = int(event["user_id"])
    text = json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str)
    return {
        "v": SEALED_VERSION,
        "tenant_id": tenant,
        "user_id": user_id,
        "task_id": event.get("task_id"),
        "sealed": keys.encrypt(user_id, text, tenant),
    }


def seal_event_bytes(
    keys: KeyRing, user_id: int, task_id: str | None, raw: bytes, tenant: str = DEFAULT_TENANT
) -> bytes:
    """As ``seal_event`` for an event already serialized (the API's ``add``)."""
    envelope = {
        "v": SEALED_VERSION,
        "tenant_id": tenant,
        "user_id": user_id,
        "task_id": task_id,
        "sealed": keys.encrypt(user_id, raw.decode("utf-8"), tenant),
    }
    return json.dumps(envelope, separators=(",", ":")).encode()


def sealed_size(plain_bytes: int) -> int:
    """An upper bound of the sealed value of a ``plain_bytes`` event (base64 + envelope)."""
    return (plain_bytes + 2) // 3 * 4 + 512


def is_sealed(data: Mapping[str, object]) -> bool:
    return "sealed" in data and isinstance(data.get("sealed"), str)


def open_event(keys: KeyRing, data: dict[str, Any]) -> JsonObject:
    """The event inside a sealed value; KeyDestroyed after a purge, DecryptionError if
    altered. The outer user_id and tenant must be the inner ones (the key that opened it
    is that tenant's user's; a value cannot change users or tenants)."""
    tenant = str(data.get("tenant_id") or DEFAULT_TENANT)
    user_id = int(data["user_id"])
    inner = json.loads(keys.decrypt(user_id, data["sealed"], tenant))
    if not isinstance(inner, dict) or inner.get("user_id") != user_id:
        raise ValueError("sealed event names another user")
    if (inner.get("tenant_id") or DEFAULT_TENANT) != tenant:
        raise ValueError("sealed event names another tenant")
    return inner


def seal_payload(keys: KeyRing, user_id: int, payload: Mapping[str, object], tenant: str) -> str:
    return keys.encrypt(user_id, json.dumps(payload, ensure_ascii=False, default=str), tenant)


def open_payload(keys: KeyRing, user_id: int, sealed: str, tenant: str) -> JsonObject:
    return json.loads(keys.decrypt(user_id, sealed, tenant))
