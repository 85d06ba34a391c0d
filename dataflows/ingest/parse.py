"""Parse and validate raw Kafka messages; anything bad becomes a Rejected for the DLQ."""

from __future__ import annotations

import json

from pydantic import ValidationError

from core.hashing import task_id_for_source
from core.settings import Settings
from dataflows.ingest.items import Incoming, IncomingCommand, Rejected, Source
from schemas.commands import Command
from schemas.events import ConversationEvent

Parsed = Incoming | IncomingCommand | Rejected


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "event"
        parts.append(f"{loc}: {err['msg']}")
    return "invalid event: " + "; ".join(parts)


def _decode(src: Source, settings: Settings) -> dict | Rejected:
    raw = src.value
    if raw is None:
        return Rejected("empty message (no value)", src)
    if len(raw) > settings.max_event_bytes:
        return Rejected(
            f"event of {len(raw)} bytes exceeds max_event_bytes ({settings.max_event_bytes})", src
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Rejected(f"value is not valid UTF-8: {exc.reason} at byte {exc.start}", src)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Rejected(f"value is not JSON: {exc.msg} at line {exc.lineno} col {exc.colno}", src)
    if not isinstance(data, dict):
        return Rejected("event must be a JSON object", src)
    return data


def parse_conversation(src: Source, settings: Settings) -> Incoming | Rejected:
    data = _decode(src, settings)
    if isinstance(data, Rejected):
        return data
    messages = data.get("messages")
    if isinstance(messages, list) and len(messages) > settings.max_turns_per_event:
        return Rejected(
            f"{len(messages)} turns exceed max_turns_per_event "
            f"({settings.max_turns_per_event}); split the conversation",
            src,
        )
    try:
        event = ConversationEvent.model_validate(data)
    except ValidationError as exc:
        return Rejected(_describe(exc), src)
    for i, m in enumerate(event.messages):
        size = len(m.content.encode("utf-8"))
        if size > settings.max_message_bytes:
            return Rejected(
                f"messages[{i}] has {size} bytes, over max_message_bytes "
                f"({settings.max_message_bytes})",
                src,
            )
    task_id = event.task_id or task_id_for_source(src.topic, src.partition, src.offset)
    return Incoming(event, task_id, src)


def parse_command(src: Source, settings: Settings) -> IncomingCommand | Rejected:
    data = _decode(src, settings)
    if isinstance(data, Rejected):
        return data
    try:
        return IncomingCommand(Command.model_validate(data), src)
    except ValidationError as exc:
        return Rejected(_describe(exc).replace("event", "command", 1), src)
