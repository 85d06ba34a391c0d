"""The searches over one ``core.user_index.UserIndex`` (under its ``lock``): which rows a
recall predicate accepts by the columns alone (``allowed``), and the top rows by cosine
(``dense``) and by BM25 (``lexical``) among them. ``UserIndex`` answers through these."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from core.index_views import CODES, Coded
from core.settings import Settings
from core.timeutil import SECONDS_PER_DAY
from core.vector_rows import unit
from schemas.enums import Level, MemType, Ownership, Status
from schemas.memory import MemoryRecord

if TYPE_CHECKING:
    from core.user_index import Decoded, UserIndex


class Scoped(Protocol):
    """What ``UserIndex.allowed`` reads of a predicate (``core.scope.RecallPredicate``, a
    frozen dataclass: read-only members)."""

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
    def tags(self) -> tuple[Any, ...]: ...
    @property
    def as_of_ms(self) -> int | None: ...

    @property
    def branches(self) -> tuple[Any, ...]: ...  # (level, app_id, session_id) each


def allowed(idx: UserIndex, pred: Scoped) -> tuple[np.ndarray, bool]:
    """The rows ``pred`` accepts by the columns alone (user, tenant, status, scope
    branches, ownership, type, validity), and whether that is all of ``pred``: when
    not (tag filters, as-of reads), a caller still tests the records of those rows
    with ``pred.matches``. The same rules as ``RecallPredicate.matches``; a unit test
    holds the two equal."""
    n = len(idx._ids)
    if pred.user_id != idx.user_id or pred.tenant_id != idx.tenant_id:
        return np.zeros(n, dtype=np.bool_), True
    ok = _isin(idx._status[:n], Status, pred.statuses)
    branch = np.zeros(n, dtype=np.bool_)
    level, app, session = idx._level[:n], idx._app[:n], idx._session[:n]
    for b in pred.branches:
        m = level == CODES[Level][b.level]
        if b.app_id is not None:
            code = idx._app_index(b.app_id or None)
            m &= app == code if code >= 0 else False
        if b.session_id is not None:
            code = idx._sessions.get(b.session_id or None, -1)
            m &= session == code if code >= 0 else False
        branch |= m
    ok &= branch
    if pred.ownership:
        ok &= _isin(idx._own[:n], Ownership, pred.ownership)
    if pred.mem_type:
        ok &= _isin(idx._type[:n], MemType, pred.mem_type)
    if pred.as_of_ms is None:
        ok &= ~idx._invalid[:n]
    return ok, not pred.tags and pred.as_of_ms is None


def dense(
    idx: UserIndex,
    query: np.ndarray,
    limit: int,
    keep: Callable[[MemoryRecord], bool] | None = None,
    memo: Decoded | None = None,
    rows: np.ndarray | None = None,
) -> list[tuple[str, float]]:
    """Top ``limit`` (memory_id, cosine) among the ``rows`` (a mask: ``allowed``)
    whose records ``keep`` accepts."""
    n = len(idx._ids)
    if n == 0 or limit <= 0:
        return []
    scores = (idx._q[:n].astype(np.float32) @ unit(query)) * idx._inv[:n]
    if rows is None:
        order = np.argsort(-scores, kind="stable").tolist()
    else:  # stable over the kept rows in row order: the same order, filtered
        kept = np.flatnonzero(rows)
        order = kept[np.argsort(-scores[kept], kind="stable")].tolist()
    out: list[tuple[str, float]] = []
    memo = {} if memo is None and keep is not None else memo
    for i in order:
        mid = idx._ids[i]
        if keep is None or keep(idx.record(mid, memo)):  # type: ignore[arg-type]
            out.append((mid, float(scores[i])))
            if len(out) == limit:
                break
    return out


def lexical(
    idx: UserIndex,
    query: str,
    limit: int,
    keep: Callable[[MemoryRecord], bool] | None = None,
    memo: Decoded | None = None,
    rows: np.ndarray | None = None,
) -> list[tuple[str, float]]:
    """Top ``limit`` (memory_id, BM25 normalized to [0, 1]) among the ``rows`` (a
    mask: ``allowed``) whose records ``keep`` accepts."""
    hit, scores = idx._lexical.normalized(query)
    if rows is not None:
        inside = rows[hit]
        hit, scores = hit[inside], scores[inside]
    out: list[tuple[str, float]] = []
    memo = {} if memo is None and keep is not None else memo
    rows = hit.tolist()
    for j in np.argsort(-scores, kind="stable").tolist():
        mid = idx._ids[rows[j]]
        if keep is None or keep(idx.record(mid, memo)):  # type: ignore[arg-type]
            out.append((mid, float(scores[j])))
            if len(out) == limit:
                break
    return out


def _isin(column: np.ndarray, enum: Coded, members: frozenset[Any]) -> np.ndarray:
    codes = CODES[enum]
    return np.isin(column, [codes[m] for m in members])


def paged_rows(idx: UserIndex, now_us: int, settings: Settings) -> np.ndarray:
    """The rows ``core.capacity.paged_out`` accepts at ``now_us`` (µs since the
    epoch), from the columns: ARCHIVED, not expired, decayed weight above the
    archive threshold (``core.weights.weight_at_us`` over every row at once)."""
    n = len(idx._ids)
    s = settings
    alpha = np.where(
        idx._persona[:n],
        0.0,
        np.where(idx._important[:n], s.decay_alpha_important, s.decay_alpha_normal),
    )
    days = np.maximum(now_us - idx._weight_at[:n], 0) / 10**6 / SECONDS_PER_DAY
    w = idx._weight[:n] * np.exp(-s.decay_lambda * alpha * days)
    expire = idx._expire[:n]
    ok = idx._status[:n] == CODES[Status][Status.ARCHIVED]
    out: np.ndarray = ok & (w > s.archive_threshold) & ((expire == 0) | (expire > now_us))
    return out
