"""Limits checked at the edge, before anything is accepted (HTTP bodies and Kafka events).

Every size, count and depth a caller controls has a bound here or in the settings
(``max_message_bytes``, ``max_event_bytes``, ``max_turns_per_event``,
``max_request_bytes``). Types, not checks scattered over handlers: a model that uses
``UserId`` or ``CustomTags`` refuses a violation during validation (40001 in the API,
the DLQ with the reason in the dataflow).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, Field

UINT64_MAX = 2**64 - 1
MAX_TAGS_DEPTH = 8  # {"a": {"b": 1}} is depth 2; deeper trees broke JSON codecs downstream
MAX_TAGS_BYTES = 8 * 1024  # the tags' compact JSON, UTF-8

# A user id is a JSON integer, nothing that merely converts to one (``true`` is not user 1,
# ``"7"`` and ``7.0`` are not user 7).
UserId = Annotated[int, Field(strict=True, ge=0, le=UINT64_MAX)]


def json_depth(value: Any) -> int:
    """Nesting depth of a JSON-like value (scalars 0, ``{}``/``[]`` 1), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            deepest = max(deepest, depth)
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_TAGS_DEPTH + 1:
            return deepest  # deep enough to refuse; don't walk a hostile tree further
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_tags(tags: dict[str, Any]) -> dict[str, Any]:
    depth = json_depth(tags)
    if depth > MAX_TAGS_DEPTH:
        raise ValueError(f"custom_tags nested deeper than {MAX_TAGS_DEPTH} levels")
    text = json.dumps(tags, ensure_ascii=False, separators=(",", ":"), default=str)
    size = len(text.encode("utf-8"))
    if size > MAX_TAGS_BYTES:
        raise ValueError(f"custom_tags of {size} bytes exceed {MAX_TAGS_BYTES} bytes")
    return tags


def clip_tags(tags: dict[str, Any]) -> dict[str, Any]:
    """``tags`` cut at ``MAX_TAGS_DEPTH``: a subtree that reaches deeper becomes its JSON text.

    For tags stored before the limit existed (older nodes took ~250 levels, which later
    broke every codec that read them); the cut keeps what was stored, as text, where the
    tree would go too deep, so every read of that user answers again.
    """
    if json_depth(tags) <= MAX_TAGS_DEPTH:
        return tags
    return _clip(tags, 1)


def _clip(node: Any, level: int) -> Any:
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return node
    out: dict[Any, Any] = {}
    for k, child in items:
        if isinstance(child, dict | list) and level >= MAX_TAGS_DEPTH:
            out[k] = json.dumps(child, ensure_ascii=False, separators=(",", ":"), default=str)
        else:
            out[k] = _clip(child, level + 1)
    return out if isinstance(node, dict) else list(out.values())


CustomTags = Annotated[dict[str, Any], AfterValidator(check_tags)]


# What the stores can hold: ClickHouse DateTime64 spans 1900-01-01 .. 2299-12-31.
STORE_TIME_MIN = datetime(1900, 1, 1, tzinfo=UTC)
STORE_TIME_MAX = datetime(2299, 12, 31, 23, 59, 59, tzinfo=UTC)


def store_time(value: datetime) -> datetime:
    """An instant as UTC (naive = UTC) inside what the stores can hold; a bound of a query
    beyond that range means the same as the range's end."""
    value = value.replace(tzinfo=UTC) if value.utcoffset() is None else value
    try:
        value = value.astimezone(UTC)
    except OverflowError:  # year 1 at +01:00 or 9999 at -01:00
        return STORE_TIME_MIN if value.year < 1900 else STORE_TIME_MAX
    return min(max(value, STORE_TIME_MIN), STORE_TIME_MAX)


QueryTime = Annotated[datetime, AfterValidator(store_time)]
