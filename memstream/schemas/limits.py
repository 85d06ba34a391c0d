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
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

from memstream.schemas.enums import DERIVED_TYPES, KEYED_TYPES, MemType
from memstream.schemas.json_types import JsonObject, JsonValue

UINT64_MAX = 2**64 - 1
MAX_TAGS_DEPTH = 8  # {"a": {"b": 1}} is depth 2; deeper trees broke JSON codecs downstream
MAX_TAGS_BYTES = 8 * 1024  # the tags' compact JSON, UTF-8

# A user id is a JSON integer, nothing that merely converts to one (``true`` is not user 1,
# ``"7"`` and ``7.0`` are not user 7).
UserId = Annotated[int, Field(strict=True, ge=0, le=UINT64_MAX)]

# The text rule (docs/api.md#text), the one every edge applies before anything else: the
# HTTP bodies, path and query parameters, and every Kafka record the flows read.
# - No string anywhere (a field, a list item, a key or value nested in custom_tags) holds a
#   lone UTF-16 surrogate or NUL. Python's JSON decoder turns "\\ud83d" into a surrogate
#   that no UTF-8 encoder takes: one such record stopped the ingest at its Redis write.
# - An id (app_id, session_id, task_id, msg_id, a custom_tags key) holds no control
#   character either (C0 such as newline, tab and NUL, DEL, C1): recall refused those
#   already, and Milvus filter expressions cannot carry them safely.
# - Newlines stay legal in content, names and tag values.
_NOT_TEXT = re.compile(r"[\x00\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def text_problem(value: str) -> str | None:
    """Why ``value`` is not text every store can hold, or None when it is."""
    found = _NOT_TEXT.search(value)
    if found is None:
        return None
    char = found.group()
    if char == "\x00":
        return "must not contain NUL (U+0000)"
    return f"must not contain a lone surrogate (U+{ord(char):04X}); send UTF-8 text"


def check_text(value: str) -> str:
    if (problem := text_problem(value)) is not None:
        raise ValueError(problem)
    return value


def has_control_chars(value: str) -> bool:
    return _CONTROL.search(value) is not None


def check_id_text(value: str, what: str = "an id") -> str:
    """An id: text (``check_text``) without control characters."""
    check_text(value)
    if has_control_chars(value):
        raise ValueError(f"{what} must not contain control characters (newline, tab, NUL…)")
    return value


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


def _step(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _NAME.fullmatch(key):
        return f"{path}.{key}" if path else key
    shown = json.dumps(key[:40] + ("…" if len(key) > 40 else ""))  # ASCII: safe in any header
    return f"{path}[{shown}]"


def first_bad_text(data: object, root: str = "") -> str | None:
    """``"<json path>: <problem>"`` for the first string of decoded JSON ``data`` (keys
    included) that breaks the text rule, None when none does. Runs before any model
    validation, so every field, nested or not, is covered by this one walk; the answer
    never quotes the bad string, only where it is (it goes into DLQ headers and logs)."""
    stack: list[tuple[object, str]] = [(data, root)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if (problem := text_problem(node)) is not None:
                return f"{path or 'value'}: {problem}"
        elif isinstance(node, dict):
            children = []
            for key, child in node.items():
                if isinstance(key, str) and (problem := text_problem(key)) is not None:
                    return f"{path or 'value'}: a key {problem}"
                children.append((child, _step(path, key)))
            stack.extend(reversed(children))  # depth first, in document order
        elif isinstance(node, list):
            stack.extend((node[i], _step(path, i)) for i in range(len(node) - 1, -1, -1))
    return None


# app_id, session_id and custom_tags keys: the one rule every endpoint and the Kafka
# parser apply, so whatever add stores, recall can ask for: 1..128 characters of text,
# none a control character.
MAX_SCOPE_CHARS = 128


def check_scope_text(value: str, what: str = "an app_id/session_id") -> str:
    if not 1 <= len(value) <= MAX_SCOPE_CHARS:
        raise ValueError(f"{what} must have 1 to {MAX_SCOPE_CHARS} characters")
    return check_id_text(value, what)


ScopeId = Annotated[str, StringConstraints(strict=True), AfterValidator(check_scope_text)]

# task_id, msg_id, request_id, memory ids: strings without control characters (their
# lengths stay on each field).
IdText = Annotated[str, StringConstraints(strict=True), AfterValidator(check_id_text)]
MemoryId = Annotated[IdText, StringConstraints(min_length=1, max_length=64)]

# Any other string a model holds (a name, a strategy's focus): text (newlines allowed).
Text = Annotated[str, StringConstraints(strict=True), AfterValidator(check_text)]

# Numbers in a request are JSON numbers, never strings that convert to one ("5" is not 5,
# true is not 1); a JSON integer stays a valid float.
StrictNumber = Annotated[float, Field(strict=True)]

# What is left of blank text: Unicode's controls and format characters (Cc, Cf: NUL,
# U+200B, U+FEFF…), space and line separators (Zs, Zl, Zp), and the letters that render
# as nothing (Braille blank, the Hangul fillers).
_BLANK_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
_BLANK_LOOKALIKES = frozenset("\u2800\u3164\u115f\u1160\uffa0")


def is_blank(value: str) -> bool:
    """Nothing visible: stops at the first character that is not blank."""
    return all(
        ch in _BLANK_LOOKALIKES or unicodedata.category(ch) in _BLANK_CATEGORIES for ch in value
    )


def not_blank(value: str) -> str:
    """Text with nothing visible (whitespace, zero-width or invisible characters only) is
    refused, never stored as an empty memory."""
    if is_blank(value):
        raise ValueError("must not be blank (only whitespace or invisible characters)")
    return check_text(value)


# Memory text as a caller sends it (lengths stay on each field): text, not blank.
Content = Annotated[str, AfterValidator(not_blank)]


def json_depth(value: object) -> int:
    """Nesting depth of a JSON-like value (scalars 0, ``{}``/``[]`` 1), without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[object]
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


def check_tag_values(tags: JsonObject) -> None:
    """Refuse what the stores would not give back unchanged: NaN and ±Infinity (stored as
    null) and integers outside ``TAG_INT_MIN .. TAG_INT_MAX`` (read back as floats)."""
    stack: list[object] = [tags]
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


def check_tags(tags: JsonObject) -> JsonObject:
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
    if (bad := first_bad_text(tags)) is not None:  # nested keys and values: the text rule
        raise ValueError(bad)
    return tags


def clip_tags(tags: JsonObject) -> JsonObject:
    """``tags`` cut at ``MAX_TAGS_DEPTH``: a subtree that reaches deeper becomes its JSON text.

    For tags stored before the limit existed (older nodes took ~250 levels, which later
    broke every codec that read them); the cut keeps what was stored, as text, where the
    tree would go too deep, so every read of that user answers again.
    """
    if json_depth(tags) <= MAX_TAGS_DEPTH:
        return tags
    return {k: _clip(child, 1) for k, child in tags.items()}


def _clip(node: JsonValue, level: int) -> JsonValue:
    """``node``, a child at ``level``: as JSON text where it would reach deeper."""
    if isinstance(node, dict | list) and level >= MAX_TAGS_DEPTH:
        return json.dumps(node, ensure_ascii=False, separators=(",", ":"), default=str)
    if isinstance(node, dict):
        return {k: _clip(child, level + 1) for k, child in node.items()}
    if isinstance(node, list):
        return [_clip(child, level + 1) for child in node]
    return node


CustomTags = Annotated[JsonObject, AfterValidator(check_tags)]


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


def _written_type(value: MemType) -> MemType:
    if value in DERIVED_TYPES:
        raise ValueError(
            f"mem_type {value} is derived: memstream writes it from the user's memories "
            "(docs/architecture.md#the-profile)"
        )
    if value in KEYED_TYPES:
        raise ValueError(
            f"mem_type {value} is written by key: use items/put "
            "(docs/architecture.md#key-value-items)"
        )
    return value


# A mem_type a caller or an extractor may write: every one but the derived and keyed kinds.
WrittenType = Annotated[MemType, AfterValidator(_written_type)]
