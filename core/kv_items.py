"""Key-value items: the pure rules (docs/architecture.md#key-value-items).

An item is one memory of ``mem_type`` ITEM, the agent's own key-value memory (LangGraph's
``BaseStore``). Its parts live in the memory's own sealed fields:

- ``content``: the value as JSON text, exactly as the caller's object decodes (key order
  kept), so history shows each version's value and a purge shreds it with the words;
- ``custom_tags["item"]``: ``{"ns": [labels], "key": key, "index": null|false|[paths]}``;
- the vector: of :func:`embedded_text` (``index`` null: the whole value's JSON text;
  a list of field paths: those fields' text; false: nothing of the value, the item is
  not semantically searchable).

Its memory id is :func:`item_id` of (tenant, user, scope, namespace, key): a put on the
same key in the same scope is a new version of the same memory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from core.hashing import stable_id
from core.lexical import BM25Index
from core.ranking import Fusion, fuse
from memstream.schemas.json_types import JsonObject, JsonValue
from memstream.schemas.memory import MemoryRecord

PREFIX = "i_"  # an item's memory id: PREFIX + hex (``item_id``)
TAG = "item"  # custom_tags key of the item's namespace, key and index
WILDCARD = "*"  # in a namespaces prefix/suffix: any one label

Index = bool | list[str] | None  # None: the whole value; False: not embedded
COMPARISONS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def item_id(
    tenant: str,
    user_id: int,
    app_id: str | None,
    session_id: str | None,
    namespace: Sequence[str],
    key: str,
) -> str:
    """The memory id of the item at ``key`` in ``namespace`` of one scope. JSON keeps the
    parts apart (no label can end where the next begins)."""
    parts = json.dumps([app_id or "", session_id or "", list(namespace), key], ensure_ascii=False)
    return stable_id(PREFIX, tenant, user_id, parts)


def is_item_id(memory_id: str) -> bool:
    return memory_id.startswith(PREFIX)


def value_text(value: JsonObject) -> str:
    """The value as stored: compact JSON, key order and unicode kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _field(value: JsonValue, path: str) -> JsonValue | None:
    node: JsonValue | None = value
    for part in path.split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _text(node: JsonValue) -> str:
    return node if isinstance(node, str) else json.dumps(node, ensure_ascii=False)


def embedded_text(value: JsonObject, index: Index) -> str:
    """What the item's vector says: the whole value (``index`` None or True), the named
    fields' texts joined by newlines (a top-level or dotted path; a missing one adds
    nothing), or "" (``index`` False: the vector says nothing of the value)."""
    if index is None or index is True:
        return value_text(value)
    if index is False or index == []:
        return ""
    found = [_field(value, path) for path in index]
    return "\n".join(_text(n) for n in found if n is not None)


@dataclass(frozen=True, slots=True)
class ItemView:
    """An item as read from its memory record."""

    memory_id: str
    namespace: tuple[str, ...]
    key: str
    value: JsonObject
    index: Index
    created_at: datetime
    updated_at: datetime
    app_id: str | None = None  # the item's scope: an app's, a session's, else GLOBAL
    session_id: str | None = None

    @property
    def searchable(self) -> bool:
        return self.index is not False and self.index != []


def item_tags(namespace: Sequence[str], key: str, index: Index) -> JsonObject:
    return {TAG: {"ns": list(namespace), "key": key, "index": _index_json(index)}}


def _index_json(index: Index) -> JsonValue:
    return list(index) if isinstance(index, list) else index


def view_of(rec: MemoryRecord) -> ItemView | None:
    """The item ``rec`` holds; None when it holds none (shredded words, another kind)."""
    tag = rec.custom_tags.get(TAG)
    if not isinstance(tag, dict) or not rec.content:
        return None
    ns, key, index = tag.get("ns"), tag.get("key"), tag.get("index")
    try:
        value = json.loads(rec.content)
    except ValueError:
        return None
    if not isinstance(ns, list) or not isinstance(key, str) or not isinstance(value, dict):
        return None
    idx: Index = index if isinstance(index, bool) else None
    if isinstance(index, list):
        idx = [p for p in index if isinstance(p, str)]
    labels = tuple(x for x in ns if isinstance(x, str))
    return ItemView(
        rec.memory_id,
        labels,
        key,
        value,
        idx,
        rec.created_at,
        rec.updated_at,
        rec.app_id or None,
        rec.session_id or None,
    )


def in_scope(
    item_app: str | None,
    item_session: str | None,
    app_id: str | None,
    session_id: str | None,
    subtree: bool,
) -> bool:
    """Is an item of scope (``item_app``, ``item_session``) read by a read of scope
    (``app_id``, ``session_id``)? Exactly that scope; with ``subtree`` also every scope
    beneath it: GLOBAL covers the user's apps and sessions, an app its sessions, a
    session itself only (whom the key may read is the caller's check, not this one)."""
    if not subtree or session_id is not None:
        return item_app == app_id and item_session == session_id
    return app_id is None or item_app == app_id


def record_text(rec: MemoryRecord) -> str:
    """The text a memory's vector is made of: an item's :func:`embedded_text`, any other
    memory's content (re-embedding and reconcile use this one rule)."""
    view = view_of(rec) if is_item_id(rec.memory_id) else None
    return rec.content if view is None else embedded_text(view.value, view.index)


# ------------------------------------------------------------------------------ filters
def _compare(left: JsonValue | None, op: str, right: JsonValue) -> bool:
    """One comparison; values of types that do not compare are simply no match."""
    if op == "$eq":
        return _equal(left, right)
    if op == "$ne":
        return not _equal(left, right)
    if isinstance(left, bool) or isinstance(right, bool):
        return False  # true > 0 is no question a filter asks
    if isinstance(left, int | float) and isinstance(right, int | float):
        a, b = float(left), float(right)
    elif isinstance(left, str) and isinstance(right, str):
        a, b = left, right  # type: ignore[assignment]
    else:
        return False
    if op == "$gt":
        return a > b
    if op == "$gte":
        return a >= b
    if op == "$lt":
        return a < b
    return a <= b  # $lte


def _equal(left: JsonValue | None, right: JsonValue) -> bool:
    if isinstance(left, bool) != isinstance(right, bool):
        return False  # JSON's true is not 1
    return left == right


def _is_ops(cond: JsonValue) -> bool:
    return isinstance(cond, dict) and any(k.startswith("$") for k in cond)


def _matches_one(left: JsonValue | None, cond: JsonValue) -> bool:
    """LangGraph's rule: operators compare; an object matches an object holding those
    fields (each by this rule); anything else is equal or not."""
    if isinstance(cond, dict) and _is_ops(cond):
        return all(_compare(left, op, v) for op, v in cond.items())
    if isinstance(cond, dict):
        return isinstance(left, dict) and all(_matches_one(left.get(k), v) for k, v in cond.items())
    return _equal(left, cond)


def filter_problem(flt: Mapping[str, JsonValue], where: str = "filter") -> str | None:
    """Why a search filter cannot be applied (40001), else None."""
    for field, cond in flt.items():
        if not isinstance(cond, dict):
            continue
        if _is_ops(cond):
            bad = [k for k in cond if k not in COMPARISONS]
            if bad:
                ops = ", ".join(COMPARISONS)
                return f"{where}.{field}: unknown operator {bad[0]!r} (use {ops})"
        elif (problem := filter_problem(cond, f"{where}.{field}")) is not None:
            return problem
    return None


def matches(value: JsonObject, flt: Mapping[str, JsonValue]) -> bool:
    """Does ``value`` pass ``flt`` (every field's condition)?"""
    return all(_matches_one(value.get(field), cond) for field, cond in flt.items())


# --------------------------------------------------------------------------- namespaces
def _fits(labels: Sequence[str], path: Sequence[str]) -> bool:
    return all(p == WILDCARD or p == x for x, p in zip(labels, path, strict=False))


def namespace_matches(
    namespace: Sequence[str], prefix: Sequence[str] | None, suffix: Sequence[str] | None
) -> bool:
    """LangGraph's ``list_namespaces`` conditions: ``prefix`` / ``suffix`` with ``*`` for
    any one label; a namespace shorter than the condition does not match."""
    if prefix and (len(namespace) < len(prefix) or not _fits(namespace, prefix)):
        return False
    if suffix and (len(namespace) < len(suffix) or not _fits(namespace[::-1], list(suffix)[::-1])):
        return False
    return True


def list_namespaces(
    namespaces: Sequence[Sequence[str]],
    prefix: Sequence[str] | None,
    suffix: Sequence[str] | None,
    max_depth: int | None,
) -> list[tuple[str, ...]]:
    """The distinct namespaces that match, cut to ``max_depth`` labels, sorted."""
    out = set()
    for ns in namespaces:
        if namespace_matches(ns, prefix, suffix):
            out.add(tuple(ns[:max_depth] if max_depth is not None else ns))
    return sorted(out)


# ------------------------------------------------------------------------------ ranking
def cosines(query_vector: np.ndarray, vectors: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The cosine of each vector to the query's."""
    qn = float(np.linalg.norm(query_vector))
    out = {}
    for mid, vec in vectors.items():
        norm = float(np.linalg.norm(vec)) * qn
        out[mid] = float(vec @ query_vector) / norm if norm > 0 else 0.0
    return out


def rank(
    views: Sequence[ItemView],
    query: str,
    dense: Mapping[str, float] | None,
    fusion: Fusion,
) -> list[tuple[ItemView, float | None]]:
    """``views`` by relevance to ``query``, as recall fuses its channels
    (``core.ranking.fuse``): ``dense`` the calibrated relevance of each item's vector
    (None: the lexical channel alone), and BM25 over the items' embedded texts. The items
    not embedded (or without a vector yet) follow, most recently updated first, with no
    score (LangGraph's own store does the same)."""
    searchable = [v for v in views if v.searchable and (dense is None or v.memory_id in dense)]
    lexical = BM25Index()
    for v in searchable:
        lexical.add(v.memory_id, embedded_text(v.value, v.index))
    lex = lexical.normalized(query) if query else {}
    scored = [
        (v, fuse(None if dense is None else dense[v.memory_id], lex.get(v.memory_id), fusion))
        for v in searchable
    ]
    # ties (a fused relevance saturates at 1) go to the closer vector, then the better
    # lexical match, so an exact match outranks a near one whatever the ids
    near = dense or {}
    scored.sort(
        key=lambda x: (
            -x[1],
            -near.get(x[0].memory_id, 0.0),
            -lex.get(x[0].memory_id, 0.0),
            x[0].memory_id,
        )
    )
    held = {v.memory_id for v, _ in scored}
    rest = recent([v for v in views if v.memory_id not in held])
    return [(v, s) for v, s in scored] + [(v, None) for v in rest]


def recent(views: Sequence[ItemView]) -> list[ItemView]:
    """Most recently updated first (ties: by namespace and key)."""
    by_key = sorted(views, key=lambda v: (v.namespace, v.key))
    return sorted(by_key, key=lambda v: v.updated_at, reverse=True)
