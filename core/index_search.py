"""The searches over one user's ``core.index_columns.Columns`` (under the index's
``lock``): which rows a recall predicate accepts by the columns alone (``allowed``), the
top rows by cosine (``dense``) and by BM25 (``lexical``) among them, and which rows are
paged out now (``paged_rows``). ``core.user_index.UserIndex`` answers through these."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Protocol

import numpy as np

from core.index_columns import CODES, Coded, Columns, Decoded
from core.index_views import decoded_row
from core.scope import Branch, TagFilter
from core.settings import Settings
from core.timeutil import SECONDS_PER_DAY
from core.vector_rows import unit
from memstream.schemas.enums import KEYED_TYPES, Level, MemType, Ownership, Status
from memstream.schemas.memory import MemoryRecord


class Scoped(Protocol):
    """What ``allowed`` reads of a predicate (``core.scope.RecallPredicate``, a frozen
    dataclass: read-only members)."""

    @property
    def user_id(self) -> int: ...
    @property
    def tenant_id(self) -> str: ...
    @property
    def statuses(self) -> frozenset[Status]: ...
    @property
    def ownership(self) -> frozenset[Ownership]: ...
    @property
    def mem_type(self) -> frozenset[MemType]: ...
    @property
    def tags(self) -> tuple[TagFilter, ...]: ...
    @property
    def as_of_ms(self) -> int | None: ...
    @property
    def entities(self) -> frozenset[str]: ...
    @property
    def branches(self) -> tuple[Branch, ...]: ...


def allowed(c: Columns, pred: Scoped, user_id: int, tenant_id: str) -> tuple[np.ndarray, bool]:
    """The rows of ``user_id``'s index in ``tenant_id`` that ``pred`` accepts by the
    columns alone (user, tenant, status, scope branches, ownership, type, validity), and
    whether that is all of ``pred``: when not (tag filters, as-of reads), a caller still
    tests the records of those rows with ``pred.matches``. The same rules as
    ``RecallPredicate.matches``; a unit test holds the two equal."""
    n = len(c.ids)
    if pred.user_id != user_id or pred.tenant_id != tenant_id:
        return np.zeros(n, dtype=np.bool_), True
    ok = _isin(c.status[:n], Status, pred.statuses)
    branch = np.zeros(n, dtype=np.bool_)
    level, app, session = c.level[:n], c.app[:n], c.session[:n]
    for b in pred.branches:
        m = level == CODES[Level][b.level]
        if b.app_id is not None:
            code = _app_code(c, b.app_id or None)
            m &= app == code if code >= 0 else False
        if b.session_id is not None:
            code = c.sessions.get(b.session_id or None, -1)
            m &= session == code if code >= 0 else False
        branch |= m
    ok &= branch
    if pred.ownership:
        ok &= _isin(c.ownership[:n], Ownership, pred.ownership)
    if pred.mem_type:
        ok &= _isin(c.mem_type[:n], MemType, pred.mem_type)
    ok &= ~_isin(c.mem_type[:n], MemType, KEYED_TYPES)  # never recalled (none is held here)
    if pred.as_of_ms is None:
        ok &= ~c.invalid[:n]
    # a tag or entity filter, or an as-of read, leaves records to test one by one
    return ok, not pred.tags and not pred.entities and pred.as_of_ms is None


def dense(
    c: Columns,
    query: np.ndarray,
    limit: int,
    keep: Callable[[MemoryRecord], bool] | None = None,
    memo: Decoded | None = None,
    rows: np.ndarray | None = None,
) -> list[tuple[str, float]]:
    """Top ``limit`` (memory_id, cosine) among the ``rows`` (a mask: ``allowed``)
    whose records ``keep`` accepts."""
    ids = c.ids
    n = len(ids)
    if n == 0 or limit <= 0:
        return []
    scores = (c.q[:n].astype(np.float32) @ unit(query)) * c.inv[:n]
    if rows is None:
        order = np.argsort(-scores, kind="stable").tolist()
    else:  # stable over the kept rows in row order: the same order, filtered
        kept = np.flatnonzero(rows)
        order = kept[np.argsort(-scores[kept], kind="stable")].tolist()
    out: list[tuple[str, float]] = []
    seen: Decoded = {} if memo is None else memo
    for i in order:
        if keep is None or keep(decoded_row(c, i, seen)):
            out.append((ids[i], float(scores[i])))
            if len(out) == limit:
                break
    return out


def lexical(
    c: Columns,
    query: str,
    limit: int,
    keep: Callable[[MemoryRecord], bool] | None = None,
    memo: Decoded | None = None,
    rows: np.ndarray | None = None,
) -> list[tuple[str, float]]:
    """Top ``limit`` (memory_id, BM25 normalized to [0, 1]) among the ``rows`` (a
    mask: ``allowed``) whose records ``keep`` accepts."""
    hit, scores = c.lexical.normalized(query)
    if rows is not None:
        inside = rows[hit]
        hit, scores = hit[inside], scores[inside]
    out: list[tuple[str, float]] = []
    seen: Decoded = {} if memo is None else memo
    ids, at = c.ids, hit.tolist()
    for j in np.argsort(-scores, kind="stable").tolist():
        i = at[j]
        if keep is None or keep(decoded_row(c, i, seen)):
            out.append((ids[i], float(scores[j])))
            if len(out) == limit:
                break
    return out


def paged_rows(c: Columns, now_us: int, settings: Settings) -> np.ndarray:
    """The rows ``core.capacity.paged_out`` accepts at ``now_us`` (µs since the
    epoch), from the columns: ARCHIVED, not expired, decayed weight above the
    archive threshold (``core.weights.weight_at_us`` over every row at once)."""
    n = len(c.ids)
    s = settings
    alpha = np.where(
        c.persona[:n],
        0.0,
        np.where(c.important[:n], s.decay_alpha_important, s.decay_alpha_normal),
    )
    days = np.maximum(now_us - c.weight_at[:n], 0) / 10**6 / SECONDS_PER_DAY
    w = c.weight[:n] * np.exp(-s.decay_lambda * alpha * days)
    expire = c.expire[:n]
    ok = c.status[:n] == CODES[Status][Status.ARCHIVED]
    out: np.ndarray = ok & (w > s.archive_threshold) & ((expire == 0) | (expire > now_us))
    return out


def _isin(column: np.ndarray, enum: Coded, members: frozenset[Enum]) -> np.ndarray:
    codes = CODES[enum]
    return np.isin(column, [codes[m] for m in members])


def _app_code(c: Columns, app_id: str | None) -> int:
    """The code of ``app_id`` in ``c.apps``; -1 when no held memory has it."""
    try:
        return c.apps.index(app_id)
    except ValueError:
        return -1
