"""Apply consolidation plans on one user's hot index: merge first, then evict
(docs/architecture.md#consolidation-and-paged-out-memories).

Two callers, both inside the user's keyed writer and under the index lock:

- :func:`make_room` — the write path: ``Writer.admit`` calls it before the capacity
  check; when the new memory's scope (or the user's total) is full it merges down to the
  evict target (90 %) in one go, so it runs once per ~10 % of the limit, not per fact;
- :func:`consolidate` — the lifecycle pass (``consolidate`` command) for scopes above the
  high-water mark, down to the low-water mark.

Planning needs no vectors (:mod:`core.consolidation`: merges are decided on tokens), so
a scope with nothing to merge falls through to eviction at once. One merge: the plan's
compressed text (the same fact's most complete telling, or the frame with its values
listed), or ``rt.llm.summarize``'s text when it is a compression too — within
``consolidation_max_chars``, at most 80 % of the members together, every member's names,
numbers and dates in it — the plan's text otherwise (a failing model included). A merge
that kept a member's text reuses that member's vector; the others are embedded in one
call. Then per cluster the merged memory is added,
ONE ``MERGE`` change row names its members, and the members become SUPERSEDED by it
(their new versions carry no change row of their own: their ``memory.changes`` event is
the status-bearing REFRESH, which makes a follower reload). Counters and the index move
with every step, so the capacity check that follows sees the room made.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from core import metrics
from core.clustering import any_candidates
from core.compression import compresses
from core.consolidation import (
    Cluster,
    admission_needs,
    merged_record,
    plan_consolidation,
    superseded,
)
from core.logs import log_fields
from core.sameness import specifics
from core.user_index import UserIndex
from dataflows.ingest.recorder import Recorder
from dataflows.runtime import Runtime
from memstream.schemas.enums import OpType
from memstream.schemas.memory import MemoryRecord
from models.errors import ModelError

log = logging.getLogger(__name__)


def make_room(rt: Runtime, rc: Recorder, rec: MemoryRecord) -> list[MemoryRecord]:
    """Before ``rec`` is admitted: merge in each full dimension of its scope, if any."""
    assert rc.counters is not None
    settings = rt.settings.for_app(rec.app_id)
    if not settings.consolidation_enabled:
        return []
    needs = admission_needs(rc.counters, rec.level, rec.app_id, settings)
    return consolidate(rt, rc, needs) if needs else []


def consolidate(rt: Runtime, rc: Recorder, needs: Mapping[str, int]) -> list[MemoryRecord]:
    """Plan and apply merges freeing ``needs`` (dimension → count) in ``rc``'s index and
    counters; returns the merged."""
    idx, now, cause = rc.idx, rc.now, rc.cause
    assert idx is not None
    # Most calls find nothing to merge (RealMem: 162 of 182, each decoding and grouping
    # the user's every memory first): when no two texts share a key, planning is skipped.
    if not any_candidates(idx.contents()):
        return []
    records = list(idx.records.values())
    clusters = plan_consolidation(records, needs, now, rt.settings, cause)
    if not clusters:
        return []
    by_id = {r.memory_id: r for r in records}
    groups = [[by_id[m] for m in c.members] for c in clusters]
    texts = [_text(rt, c, members) for c, members in zip(clusters, groups, strict=True)]
    embedded = _vectors(rt, idx, groups, [t for t, _ in texts])
    out = []
    for cluster, members, (text, how), vector in zip(
        clusters, groups, texts, embedded, strict=True
    ):
        merged = merged_record(members, cluster.memory_id, text, now, rt.settings)
        out.append(_apply(rc, merged, members, how, vector))
        metrics.CONSOLIDATIONS.inc()
        metrics.CONSOLIDATED_MEMBERS.inc(len(members))
    log.info(
        "consolidated",
        extra=log_fields(
            user_id=idx.user_id, merged=len(out), members=sum(len(g) for g in groups), cause=cause
        ),
    )
    return out


def _text(rt: Runtime, cluster: Cluster, members: list[MemoryRecord]) -> tuple[str, str]:
    """The merged text and how it was made (for the change row's reason)."""
    texts = [m.content for m in members]
    bound = rt.settings.consolidation_max_chars
    try:
        with metrics.llm_call(rt.llm, "summarize"):
            text = rt.llm.summarize(texts, bound).strip()
    except ModelError as exc:
        metrics.DEGRADED_SUMMARIZE.inc()
        log.warning("summary degraded to the plan", extra=log_fields(error=type(exc).__name__))
        return cluster.text, f"{cluster.kind}, {type(exc).__name__}: {str(exc)[:120]}"
    if text == cluster.text:
        return text, cluster.kind
    refused = summary_refusal(text, texts, bound)
    if refused:
        metrics.DEGRADED_SUMMARIZE.inc()
        log.warning("summary refused", extra=log_fields(reason=refused))
        return cluster.text, f"{cluster.kind}, summary refused: {refused}"
    return text, f"summarized by {rt.llm.name}"


def summary_refusal(text: str, texts: list[str], bound: int) -> str | None:
    """Why a summary is no compression of ``texts`` (None: it is one)."""
    if not compresses(text, texts, bound):
        return f"{len(text)} chars for {sum(len(t) for t in texts)} (bound {bound})"
    low = text.casefold()
    lost = sorted({s for t in texts for s in specifics(t) if _bare(s) not in low})
    return f"lost {', '.join(lost[:5])}" if lost else None


def _vectors(
    rt: Runtime, idx: UserIndex, groups: list[list[MemoryRecord]], texts: list[str]
) -> list[np.ndarray]:
    """A kept member text reuses its vector; the other texts are embedded in one call."""
    kept = [
        next((m for m in g if m.content == t), None) for g, t in zip(groups, texts, strict=True)
    ]
    held = [idx.vector(k.memory_id) if k else None for k in kept]
    todo = [t for t, v in zip(texts, held, strict=True) if v is None]
    fresh = iter(rt.embedder.embed(todo) if todo else [])
    return [v if v is not None else next(fresh) for v in held]


def _apply(
    rc: Recorder, merged: MemoryRecord, members: list[MemoryRecord], how: str, vector: np.ndarray
) -> MemoryRecord:
    for m in members:  # no change row of their own: the MERGE row names them
        rc.retire(m, superseded(m, merged.memory_id, rc.now), None)
    reason = f"consolidated {len(members)} memories ({how}): " + ", ".join(
        m.memory_id for m in members
    )
    before = "\n".join(m.content for m in members)
    rc.add(merged, vector, reason, op=OpType.MERGE, before=before)
    return merged


def _bare(specific: str) -> str:
    """A name without its possessive ("priya's" → "priya"): the summary may drop it."""
    return specific.split("'")[0].split("’")[0]
