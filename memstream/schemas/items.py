"""The bodies of the key-value item endpoints and the ``item_put`` command's payload
(docs/api.md#key-value-items); the answers are in ``memstream.schemas.responses``.

A namespace is 1 to 8 labels (search's prefix and the namespaces' conditions: 0 to 8),
each 1 to 256 characters of text without control characters or ``.`` (LangGraph's own
rule: a dotted path names a field, never a label). A value is a JSON object of at most
``MAX_VALUE_BYTES`` as compact JSON, nested at most ``MAX_VALUE_DEPTH`` levels.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StringConstraints

from memstream.schemas.json_types import JsonObject, JsonValue
from memstream.schemas.limits import (
    UINT64_MAX,
    IdText,
    ScopeId,
    Text,
    UserId,
    check_id_text,
    json_depth,
)

MAX_LABELS = 8
MAX_LABEL_CHARS = 256
MAX_KEY_CHARS = 512
MAX_VALUE_BYTES = 32 * 1024
MAX_VALUE_DEPTH = 32
MAX_INDEX_PATHS = 32
MAX_PAGE = 1000


def _label(value: str) -> str:
    check_id_text(value, "a namespace label")
    if "." in value:
        raise ValueError("a namespace label must not contain '.'")
    return value


Label = Annotated[
    str,
    StringConstraints(strict=True, min_length=1, max_length=MAX_LABEL_CHARS),
    AfterValidator(_label),
]
Namespace = Annotated[list[Label], Field(min_length=1, max_length=MAX_LABELS)]
NamespacePath = Annotated[list[Label], Field(max_length=MAX_LABELS)]
Key = Annotated[IdText, StringConstraints(min_length=1, max_length=MAX_KEY_CHARS)]
FieldPath = Annotated[Text, StringConstraints(min_length=1, max_length=512)]
RequestId = Annotated[IdText, StringConstraints(min_length=1, max_length=128)]


def _numbers(value: JsonValue) -> None:
    stack: list[object] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, float) and not math.isfinite(node):
            raise ValueError("value: NaN and Infinity are not JSON values")
        elif isinstance(node, int) and not isinstance(node, bool):
            if not -(2**63) <= node <= UINT64_MAX:
                raise ValueError(f"value: integer {node} outside the 64-bit range")


def check_value(value: JsonObject) -> JsonObject:
    if json_depth(value) > MAX_VALUE_DEPTH:
        raise ValueError(f"value nested deeper than {MAX_VALUE_DEPTH} levels")
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > MAX_VALUE_BYTES:
        raise ValueError(f"value of {size} bytes exceeds {MAX_VALUE_BYTES} bytes as JSON")
    _numbers(value)
    return value


Value = Annotated[JsonObject, AfterValidator(check_value)]


def check_filter(flt: JsonObject) -> JsonObject:
    if json_depth(flt) > MAX_VALUE_DEPTH:
        raise ValueError(f"filter nested deeper than {MAX_VALUE_DEPTH} levels")
    return flt


Filter = Annotated[JsonObject, AfterValidator(check_filter)]
# LangGraph's ``index``: null = the whole value; false (or no paths) = not embedded;
# field paths
Index = Literal[False] | Annotated[list[FieldPath], Field(max_length=MAX_INDEX_PATHS)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Scoped(_Body):
    user_id: UserId
    app_id: ScopeId | None = None
    session_id: ScopeId | None = None


class ItemPutRequest(_Scoped):
    namespace: Namespace
    key: Key
    value: Value | None
    index: Index | None = None
    request_id: RequestId | None = None


class ItemGetRequest(_Scoped):
    namespace: Namespace
    key: Key


class _Read(_Scoped):
    """A read of the named scope only, or with ``subtree`` of it and every scope beneath
    it the key may read (GLOBAL: the user's apps and sessions; an app: its sessions)."""

    subtree: StrictBool = False


class ItemSearchRequest(_Read):
    namespace_prefix: NamespacePath = Field(default_factory=list)
    query: Annotated[Text, StringConstraints(max_length=4096)] | None = None
    filter: Filter | None = None
    limit: int = Field(10, ge=1, le=MAX_PAGE, strict=True)
    offset: int = Field(0, ge=0, le=1_000_000, strict=True)


class ItemNamespacesRequest(_Read):
    prefix: NamespacePath | None = None
    suffix: NamespacePath | None = None
    max_depth: int | None = Field(None, ge=1, strict=True)
    limit: int = Field(100, ge=1, le=MAX_PAGE, strict=True)
    offset: int = Field(0, ge=0, le=1_000_000, strict=True)


class ItemPutPayload(_Body):
    """``item_put``: one put (``value`` null: a delete) in the scope of ``app_id`` /
    ``session_id`` (docs/architecture.md#key-value-items)."""

    app_id: ScopeId | None = None
    session_id: ScopeId | None = None
    namespace: Namespace
    key: Key
    value: Value | None
    index: Index | None = None
