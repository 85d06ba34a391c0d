"""Scores of ``bench quality``: pure functions over ranked msg_id lists, no I/O.

A system answers a question with a ranked list of results; each result is the list of
source msg_ids it came from (a raw turn: its own id; a memory: ``source.msg_ids``,
several for a consolidated one). Per question, with E the evidence ids:

- ``recall@k`` = |E ∩ ids of the top k results| / |E|, k = 1, 5, 10; ``hit@10`` = any;
- changed: ``latest@1`` — the current statement is in the first result; ``stale_above``
  — a replaced statement ranks strictly above the current one (or the current one is
  missing and a replaced one is there);
- deleted: ``leak`` — the deleted turn's id is still among the top 10 (recall@k of a
  deleted question is not a goal and is left out of every mean).

With the results' contents, also evidence recall at 500 / 1,000 / 2,000 / 4,000 characters
and the characters of the top 10 (``ops.bench.quality.budget``: what an agent pays for).

``summarize`` averages per type, per language and overall (overall: the recall and budget
metrics of every type but deleted); ``ratios`` divides one system's summary by another's, metric by metric.
``paired`` counts, per language, the questions where one system's recall@10 beat
another's, lost or tied: the systems answer the same questions over the same store, so
these counts separate a real difference from the run-to-run noise of the means (the
store itself differs a little between runs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ops.bench.quality.budget import KEYS as BUDGET
from ops.bench.quality.budget import budget_scores

Ranked = Sequence[Sequence[str]]  # results, best first; each: its source msg_ids
KS = (1, 5, 10)
RECALL = tuple(f"recall@{k}" for k in KS) + ("hit@10",)


def recall_at(evidence: Iterable[str], ranked: Ranked, k: int) -> float:
    wanted = set(evidence)
    if not wanted:
        return 0.0
    found = {m for result in ranked[:k] for m in result}
    return len(wanted & found) / len(wanted)


def first_rank(ids: Iterable[str], ranked: Ranked) -> int | None:
    """0-based rank of the first result holding any of ``ids``; None when none does."""
    wanted = set(ids)
    return next((r for r, result in enumerate(ranked) if wanted & set(result)), None)


def score(
    kind: str,
    evidence: Sequence[str],
    stale: Sequence[str],
    ranked: Ranked,
    contents: Sequence[str] | None = None,
) -> dict:
    """The metrics of one answered question (see the module docstring); with the
    results' ``contents`` also the context-budget figures of ``ops.bench.quality.budget``."""
    top = ranked[:10]
    if kind == "deleted":
        return {"leak": float(first_rank(evidence, top) is not None)}
    out = {f"recall@{k}": recall_at(evidence, top, k) for k in KS}
    out["hit@10"] = float(out["recall@10"] > 0)
    if contents is not None:
        out.update(budget_scores(evidence, ranked, contents))
    if kind == "changed":
        latest, old = first_rank(evidence, top), first_rank(stale, top)
        out["latest@1"] = float(latest == 0)
        out["stale_above"] = float(old is not None and (latest is None or old < latest))
    return out


def mean_of(rows: Sequence[dict]) -> dict[str, Any]:
    """Means of every metric the rows carry, plus ``n``; rounded for the report."""
    keys = sorted({k for r in rows for k in r})
    out: dict[str, Any] = {"n": len(rows)}
    for k in keys:
        values = [r[k] for r in rows if k in r]
        out[k] = round(sum(values) / len(values), 4)
    return out


def summarize(scored: Sequence[tuple[str, str, dict]]) -> dict[str, Any]:
    """``scored``: (lang, type, metrics) per question → overall, by_type, by_lang."""

    def block(rows: Sequence[tuple[str, str, dict]]) -> dict[str, Any]:
        by_type: dict[str, list[dict]] = {}
        for _, kind, m in rows:
            by_type.setdefault(kind, []).append(m)
        overall = [{k: m[k] for k in RECALL + BUDGET if k in m}
                   for _, kind, m in rows if kind != "deleted"]  # fmt: skip
        return {
            "overall": mean_of(overall),
            "by_type": {k: mean_of(v) for k, v in sorted(by_type.items())},
        }

    out = block(scored)
    langs = sorted({lang for lang, _, _ in scored})
    out["by_lang"] = {lang: block([r for r in scored if r[0] == lang]) for lang in langs}
    return out


def ratio(a: Any, b: Any) -> float | None:
    if not isinstance(a, int | float) or not isinstance(b, int | float) or b == 0:
        return None
    return round(a / b, 3)


def ratios(system: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """``system / baseline`` for every metric present in both (``n`` left out), keeping
    the nesting of ``summarize``; None where the baseline is 0."""
    out: dict[str, Any] = {}
    for key, value in system.items():
        if key == "n" or key not in baseline:
            continue
        if isinstance(value, dict):
            out[key] = ratios(value, baseline[key])
        else:
            out[key] = ratio(value, baseline[key])
    return out


def kept_share(is_content: dict[str, bool], sourced: set[str]) -> dict[str, float | None]:
    """Share of content turns and of chit-chat turns that some memory came from."""
    out: dict[str, float | None] = {}
    for label, flag in (("content", True), ("chit", False)):
        ids = [m for m, c in is_content.items() if c is flag]
        out[label] = round(sum(m in sourced for m in ids) / len(ids), 4) if ids else None
    return out


def recalled_chars(contents: Sequence[Sequence[str]]) -> float:
    """Mean characters per answer of the top-10 contents together."""
    if not contents:
        return 0.0
    return round(sum(sum(len(c) for c in answer[:10]) for answer in contents) / len(contents), 1)


def paired(
    questions: Iterable[Any], ours: dict[str, Ranked], theirs: dict[str, Ranked]
) -> dict[str, dict[str, int]]:
    """Per language (and ``all``): questions where ``ours`` has the higher recall@10
    (``better``), the lower (``worse``) or the same (``same``); deleted ones left out."""
    out: dict[str, dict[str, int]] = {}
    for q in questions:
        if q.type == "deleted" or q.qid not in ours or q.qid not in theirs:
            continue
        a = recall_at(q.evidence, ours[q.qid], 10)
        b = recall_at(q.evidence, theirs[q.qid], 10)
        verdict = "better" if a > b else "worse" if a < b else "same"
        for key in ("all", q.lang):
            counts = out.setdefault(key, {"better": 0, "worse": 0, "same": 0})
            counts[verdict] += 1
    return out


def first_ranks(questions: Iterable[Any], systems: dict[str, dict[str, Ranked]]) -> list[dict]:
    """Per question, where each system put the evidence (0-based rank of its first hit;
    None: not in the top 10) — for reading failures, not for the summary."""
    return [
        {"qid": q.qid, "lang": q.lang, "type": q.type, "query": q.query,
         "evidence": list(q.evidence), "stale": list(q.stale),
         **{name: first_rank(q.evidence, ranked[q.qid][:10])
            for name, ranked in systems.items() if q.qid in ranked}}
        for q in questions
    ]  # fmt: skip
