"""Parse and validate raw Kafka messages; anything bad becomes a Rejected for the DLQ.

A Rejected carries the event's ``task_id`` (and user) whenever the value names one, so a
task accepted by the API and refused here is reported ``failed`` with the reason instead
of staying ``accepted``. The Kafka key must be the body's ``user_id``
(docs/architecture.md#kafka-topics): a mismatched key would put the user's events on two
partitions and break their order. Reasons name fields and limits, never the content.

Values the API sealed with the user's data key (``sinks.sealed``) are opened here; one
whose key a purge destroyed is rejected (to the DLQ, still sealed), never applied.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from core.hashing import task_id_for_source
from core.settings import Settings
from dataflows.ingest.items import Incoming, IncomingCommand, Rejected, Source
from memstream.schemas.commands import Command
from memstream.schemas.events import ConversationEvent
from memstream.schemas.limits import UINT64_MAX, first_bad_text, has_control_chars
from memstream.schemas.tenants import DEFAULT_TENANT, check_tenant
from sinks.crypto import DecryptionError, KeyDestroyed
from sinks.keyring import KeyRing
from sinks.sealed import is_sealed, open_event, open_payload, sealed_size

Parsed = Incoming | IncomingCommand | Rejected


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "event"
        parts.append(f"{loc}: {err['msg']}")
    return "invalid event: " + "; ".join(parts)


def _owner(raw: bytes) -> tuple[str | None, int | None, str]:
    """The task id, user id and tenant an event names, if it is JSON that names them well."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None, None, DEFAULT_TENANT
    if not isinstance(data, dict):
        return None, None, DEFAULT_TENANT
    task_id, user_id = data.get("task_id"), data.get("user_id")
    task_id = task_id if isinstance(task_id, str) and 0 < len(task_id) <= 128 else None
    if task_id is not None and has_control_chars(task_id):
        task_id = None  # not an id any store could hold: no task to fail
    user_id = user_id if type(user_id) is int and 0 <= user_id <= UINT64_MAX else None
    try:
        tenant = check_tenant(data.get("tenant_id", DEFAULT_TENANT))
    except ValueError:  # a task of no tenant that can be named: none is failed
        return None, None, DEFAULT_TENANT
    return task_id, user_id, tenant


def _reject(reason: str, src: Source) -> Rejected:
    """A Rejected that names the task of the value (when it names one) to be failed."""
    task_id, user_id, tenant = _owner(src.value) if src.value else (None, None, DEFAULT_TENANT)
    return Rejected(reason, src, task_id, user_id, tenant)


def _decode(src: Source, settings: Settings) -> dict | Rejected:
    raw = src.value
    if raw is None:
        return Rejected("empty message (no value)", src)
    if len(raw) > sealed_size(settings.max_event_bytes):  # plain values: checked below
        return _reject(
            f"event of {len(raw)} bytes exceeds max_event_bytes ({settings.max_event_bytes})", src
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(f"value is not valid UTF-8: {exc.reason} at byte {exc.start}", src)
    try:
        data = json.loads(text)
    except RecursionError:
        return Rejected("value is JSON nested too deeply", src)
    except json.JSONDecodeError as exc:
        return Rejected(f"value is not JSON: {exc.msg} at line {exc.lineno} col {exc.colno}", src)
    if not isinstance(data, dict):
        return Rejected("event must be a JSON object", src)
    if len(raw) > settings.max_event_bytes and not is_sealed(data):
        return _reject(
            f"event of {len(raw)} bytes exceeds max_event_bytes ({settings.max_event_bytes})", src
        )
    return data


def _unsealed(data: dict, src: Source, keys: KeyRing | None) -> dict | Rejected:
    if keys is None:
        return _reject("sealed event, but this parser holds no keys", src)
    try:
        return open_event(keys, data)
    except KeyDestroyed:
        return _reject("sealed with a destroyed data key (the user was purged): not applied", src)
    except (DecryptionError, ValueError, KeyError, TypeError) as exc:
        return _reject(f"sealed event does not open: {type(exc).__name__}", src)


def parse_conversation(
    src: Source, settings: Settings, keys: KeyRing | None = None
) -> Incoming | Rejected:
    data = _decode(src, settings)
    if isinstance(data, Rejected):
        return data
    if is_sealed(data):
        data = _unsealed(data, src, keys)
        if isinstance(data, Rejected):
            return data
    messages = data.get("messages")
    if isinstance(messages, list) and len(messages) > settings.max_turns_per_event:
        return _reject(
            f"{len(messages)} turns exceed max_turns_per_event "
            f"({settings.max_turns_per_event}); split the conversation",
            src,
        )
    if (bad := first_bad_text(data)) is not None:  # the text rule, every field at once
        return _reject(f"invalid event: {bad}", src)
    try:
        event = ConversationEvent.model_validate(data)
    except ValidationError as exc:
        return _reject(_describe(exc), src)
    if (bad_key := _key_mismatch(src, event.user_id)) is not None:
        return Rejected(bad_key, src, event.task_id, event.user_id, event.tenant_id)
    for i, m in enumerate(event.messages):
        size = len(m.content.encode("utf-8"))
        if size > settings.max_message_bytes:
            return Rejected(
                f"messages[{i}] has {size} bytes, over max_message_bytes "
                f"({settings.max_message_bytes})",
                src,
                event.task_id,
                event.user_id,
                event.tenant_id,
            )
    task_id = event.task_id or task_id_for_source(src.topic, src.partition, src.offset)
    return Incoming(event, task_id, src)


def parse_command(
    src: Source, settings: Settings, keys: KeyRing | None = None
) -> IncomingCommand | Rejected:
    data = _decode(src, settings)
    if isinstance(data, Rejected):
        return data
    if (bad := first_bad_text(data)) is not None:
        return Rejected(f"invalid command: {bad}", src)
    try:
        command = Command.model_validate(data)
    except ValidationError as exc:
        return Rejected(_describe(exc).replace("event", "command", 1), src)
    if (bad_key := _key_mismatch(src, command.user_id)) is not None:
        return Rejected(bad_key, src)
    if command.sealed is None:
        return IncomingCommand(command, src)
    try:
        if keys is None:
            raise DecryptionError("this parser holds no keys")
        payload = open_payload(keys, command.user_id, command.sealed, command.tenant_id)
    except KeyDestroyed:
        return Rejected("sealed with a destroyed data key (the user was purged)", src)
    except (DecryptionError, ValueError) as exc:
        return Rejected(f"sealed command does not open: {type(exc).__name__}", src)
    if (bad := first_bad_text(payload, "payload")) is not None:
        return Rejected(f"invalid command: {bad}", src)
    return IncomingCommand(command.model_copy(update={"payload": payload, "sealed": None}), src)


def _key_mismatch(src: Source, user_id: int) -> str | None:
    """Why the message's Kafka key is not its body's user id (None when it is)."""
    expected = str(user_id).encode()
    if src.key == expected:
        return None
    shown = "no key" if src.key is None else f"key {src.key[:40]!r}"
    return f"Kafka {shown} does not match user_id {user_id}; the key must be the user_id"
