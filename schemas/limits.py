"""Limits checked at the edge, before anything is accepted (HTTP bodies and Kafka events).

Every size, count and depth a caller controls has a bound here or in the settings
(``max_message_bytes``, ``max_event_bytes``, ``max_turns_per_event``,
``max_request_bytes``). Types, not checks scattered over handlers: a model that uses
``UserId`` or ``CustomTags`` refuses a violation during validation (40001 in the API,
the DLQ with the reason in the dataflow).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, Field, StringConstraints

UINT64_MAX = 2**64 - 1
MAX_TAGS_DEPTH = 8  # {"a": {"b": 1}} is depth 2; deeper trees broke JSON codecs downstream
MAX_TAGS_BYTES = 8 * 1024  # the tags' compact JSON, UTF-8

# A user id is a JSON integer, nothing that merely converts to one (``true`` is not user 1,
# ``"7"`` and ``7.0`` are not user 7).
UserId = Annotated[int, Field(strict=True, ge=0, le=UINT64_MAX)]

# app_id, session_id and custom_tags keys: the one rule every endpoint and the Kafka
# parser apply, so whatever add stores, recall can ask for. 1..128 characters, none a
# control character (C0 such as newline, tab and NUL, DEL, C1): recall refused those
# already, and Milvus filter expressions cannot carry them safely.
MAX_SCOPE_CHARS = 128
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def has_control_chars(value: str) -> bool:
    return _CONTROL.search(value) is not None


def check_scope_text(value: str, what: str = "an app_id/session_id") -> str:
    if not 1 <= len(value) <= MAX_SCOPE_CHARS:
        raise ValueError(f"{what} must have 1 to {MAX_SCOPE_CHARS} characters")
    if has_control_chars(value):
        raise ValueError(f"{what} must not contain control characters (newline, tab, NUL…)")
    return value


ScopeId = Annotated[str, StringConstraints(strict=True), AfterValidator(check_scope_text)]


def not_blank(value: str) -> str:
    """Text that is only whitespace is refused, never stored as an empty memory."""
    if not value.strip():
        raise ValueError("must not be blank (only whitespace)")
    return value


# Memory text as a caller sends it (lengths stay on each field): not blank.
Content = Annotated[str, AfterValidator(not_blank)]


def json_depth(value: Any) -> int:
    """Nesting depth of a JSON-like value (scalars 0, ``{}``/``[]`` 1), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
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


# Tag integers are kept exactly only inside the signed 64-bit range: the hot cache and
# the Redis snapshots read records back through orjson, which turns a larger integer
# into a float (2**70 came back as 1.1805916207174113e+21), and JSON readers of the
# stored text (ClickHouse's JSON functions) stop at 64 bits too.
TAG_INT_MIN, TAG_INT_MAX = -(2**63), 2**63 - 1


def check_tag_values(tags: dict[str, Any]) -> None:
    """Refuse what the stores would not give back unchanged: NaN and ±Infinity (stored as
    null) and integers outside ``TAG_INT_MIN .. TAG_INT_MAX`` (read back as floats)."""
    stack: list[Any] = [tags]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
        elif isinstance(node, float) and not math.isfinite(node):
            raise ValueError("custom_tags: NaN and Infinity are not JSON values")
        elif isinstance(node, int) and not TAG_INT_MIN <= node <= TAG_INT_MAX:
            raise ValueError(
                f"custom_tags: integer {node} outside the 64-bit range the stores keep exactly"
            )


def check_tags(tags: dict[str, Any]) -> dict[str, Any]:
    for key in tags:
        check_scope_text(key, "a custom_tags key")
    depth = json_depth(tags)
    if depth > MAX_TAGS_DEPTH:
        raise ValueError(f"custom_tags nested deeper than {MAX_TAGS_DEPTH} levels")
    text = json.dumps(tags, ensure_ascii=False, separators=(",", ":"), default=str)
    size = len(text.encode("utf-8"))
    if size > MAX_TAGS_BYTES:
        raise ValueError(f"custom_tags of {size} bytes exceed {MAX_TAGS_BYTES} bytes")
    check_tag_values(tags)  # after the depth check: never walk a hostile tree
    return tags


def clip_tags(tags: dict[str, Any]) -> dict[str, Any]:
    """``tags`` cut at ``MAX_TAGS_DEPTH``: a subtree that reaches deeper becomes its JSON text.

    For tags stored before the limit existed (older nodes took ~250 levels, which later
    broke every codec that read them); the cut keeps what was stored, as text, where the
    tree would go too deep, so every read of that user answers again.
    """
    if json_depth(tags) <= MAX_TAGS_DEPTH:
        return tags
    clipped: dict[str, Any] = _clip(tags, 1)
    return clipped


def _clip(node: Any, level: int) -> Any:
    items: Iterable[tuple[Any, Any]]
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

STORE_TIME_RANGE = "1900-01-01T00:00:00Z .. 2299-12-31T23:59:59Z"


def strict_store_time(value: datetime) -> datetime:
    """An instant a caller gives (naive = UTC) as UTC, refused outside what the stores
    hold: no value is ever clamped or left to overflow later (year 9999 at -01:00 is
    year 10000 in UTC, which no reader could decode)."""
    value = value.replace(tzinfo=UTC) if value.utcoffset() is None else value
    try:
        utc = value.astimezone(UTC)
    except OverflowError:  # year 1 at +01:00 or 9999 at -01:00
        utc = None
    if utc is None or not STORE_TIME_MIN <= utc <= STORE_TIME_MAX:
        raise ValueError(f"instant {value.isoformat()} outside {STORE_TIME_RANGE}")
    return utc


# Every instant a caller sends (ts, expire_at, as_of, now): normalized to UTC, in range.
StoreTime = Annotated[datetime, AfterValidator(strict_store_time)]
