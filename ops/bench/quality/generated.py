"""`memstream bench quality`: how much of what was said memstream finds again.

On a throw-away local stack (``ops.bench.env``) with the configured extractor and
embedder: ``ops.bench.quality.data`` generates seeded two-person chats (English and Chinese)
with evidence-labelled questions; every session goes in as one event through the real
Kafka path (``memory.conversations``, ``app_id`` "bench" so the per-app capacity of
docs/architecture.md#what-is-remembered applies) to the ingest flow running in-process;
answers come through ``POST /memory/v1/recall`` over HTTP (uvicorn in-process, as in the
node).

Recall asks ``top_k=10`` with ``min_relevance=0``: the bench measures the ranking, not
the threshold; a second pass at the configured ``min_relevance`` reports how much the
threshold drops. The questions are asked once per fusion mode of ``core.ranking`` —
the configured one (``memstream``, hybrid by default) and the others (``modes``: each
channel alone) — over the same ingested store: between passes the bench switches
``recall_fusion`` on the in-process ``Services`` (the API has no such knob). Deleted
questions come last: the bench deletes (``POST /memory/v1/delete``) every memory
whose sources hold the turn, then asks. The same questions go to two raw-turn
baselines (``ops.bench.quality.baselines``: bm25, dense and their RRF hybrid); the scores are
``ops.bench.quality.metrics``, with evidence recall at context budgets (``ops.bench.quality.budget``).
Before any question, each user's session-start context is scored
(``ops.bench.quality.session_start``: a window of the last turns, the memories by weight,
the profile once it exists) against the user's questions.
Every system answers ``DEPTH`` (50) deep so that the 4,000-character budget can fill.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import httpx

from core.settings import Settings
from memstream.schemas.enums import Status
from memstream.schemas.tenants import DEFAULT_TENANT
from ops.bench.env import BenchStack, bench_stack, percentiles
from ops.bench.ingest import send_events, start_ingest, wait_done
from ops.bench.quality import baselines as quality_baselines
from ops.bench.quality import metrics as quality_metrics
from ops.bench.quality.ask import APP, TOP_K, answer_all, sources
from ops.bench.quality.baselines import DEPTH, Answer
from ops.bench.quality.budget import BUDGETS
from ops.bench.quality.data import TYPES, Dataset, generate
from ops.bench.quality.session_start import SessionStart
from ops.bench.sampler import ProcSampler

LIFTED = 1_000_000  # "lifted": nothing is evicted or consolidated


def _say(message: str) -> None:
    print(f"bench quality: {message}", file=sys.stderr, flush=True)


def capacity_overrides(capacity: str) -> dict[str, Any]:  # Settings overrides
    """``default`` (the settings as they are), ``lifted``, or a per-app limit N."""
    if capacity == "default":
        return {}
    if capacity == "lifted":
        return {"capacity_per_app": LIFTED, "capacity_global": LIFTED, "capacity_total": LIFTED}
    return {"capacity_per_app": int(capacity)}


def _ingest(env: BenchStack, data: Dataset) -> dict[str, Any]:
    events = [e for u in data.users for e in u.events(APP)]
    sent = send_events(env, events)
    done = wait_done(env, sent, timeout=600 + 0.3 * len(data.turns()))
    results = list(done["results"].values())
    finished = max((r["updated_at"] for r in results), default=time.time())
    counts: dict[str, int] = {}
    for r in results:
        for k, v in (r.get("counts") or {}).items():
            counts[k] = counts.get(k, 0) + v
    return {
        "tasks": len(sent),
        "failed_tasks": sum(1 for r in results if r["status"] == "failed"),
        "missing_tasks": done["missing"],
        "seconds": round(finished - min(sent.values()), 2),
        "turns_per_s": round(len(data.turns()) / max(1e-6, finished - min(sent.values())), 1),
        "counts": counts,
    }


def _system(data: Dataset, answers: dict[str, Answer]) -> dict[str, Any]:
    """Every metric of one system over its answers."""
    rows = [(q.lang, q.type, quality_metrics.score(q.type, q.evidence, q.stale,
                                                   answers[q.qid].ranked, answers[q.qid].contents))
            for q in data.questions() if q.qid in answers]  # fmt: skip
    out = quality_metrics.summarize(rows)
    out["recalled_chars_mean"] = quality_metrics.recalled_chars(
        [a.contents for a in answers.values()]
    )
    out["recall_ms"] = {k: round(v, 2) for k, v in
                        percentiles([a.ms for a in answers.values()], (50, 99)).items()}  # fmt: skip
    failed = [str(a.code) for a in answers.values() if a.code != 0]
    out["failed_recalls"] = {c: failed.count(c) for c in sorted(set(failed))}
    return out


def _memstream(data: Dataset, answers: dict[str, Answer], stored: dict) -> dict[str, Any]:
    """memstream's metrics plus what the store kept: a turn is kept when a memory (an
    ACTIVE one; or one of any status) names it among its sources."""
    out = _system(data, answers)
    records = [r for recs in stored.values() for r in recs]
    is_content = {t.msg_id: t.is_content for t in data.turns()}
    active = {m for r in records if r.status is Status.ACTIVE for m in sources(r)}
    out["turns_kept"] = {
        "active": quality_metrics.kept_share(is_content, active),
        "any_status": quality_metrics.kept_share(
            is_content, {m for r in records for m in sources(r)}
        ),
    }
    status = [r.status.value for r in records]
    out["memories_by_status"] = {v: status.count(v) for v in sorted(set(status))}
    return out


def bench_quality(
    settings: Settings,
    users: int = 20,
    sessions: int = 20,
    seed: int = 7,
    lang: str = "both",
    capacity: str = "default",
) -> dict[str, Any]:
    data = generate(users, sessions, seed, lang)
    questions = data.questions()
    overrides = capacity_overrides(capacity)
    with bench_stack(settings, **overrides) as env, ProcSampler() as node:
        flow = start_ingest(env)
        try:
            _say(f"ingesting {len(data.turns())} turns in {len(data.users) * sessions} sessions")
            ingest = _ingest(env, data)
            _say(f"ingested in {ingest['seconds']} s; asking {len(questions)} questions")
            stored = {
                u.user_id: env.runtime.memories.load(u.user_id, tenant=DEFAULT_TENANT)
                for u in data.users
            }
            docs, asks = quality_baselines.generated(data)
            start = SessionStart(APP)

            def at_start(client: httpx.Client, base: str) -> None:
                for u in data.users:  # one session start per user, after all its sessions
                    start.measure(client, base, u.user_id, u.questions, docs[u.user_id], None)

            by_mode, at_default, deleted = answer_all(env, data, stored, at_start)
        finally:
            flow.stop()
        _say("raw-turn baselines (bm25, dense, hybrid)")
        started = time.monotonic()
        base = quality_baselines.rank(docs, asks, env.runtime.embedder)
        baseline_s = time.monotonic() - started
        s = env.settings
    fusion, *others = list(by_mode)
    ours = by_mode[fusion]
    memstream = _memstream(data, ours, stored)
    memstream["deleted"] = deleted
    modes = {f"memstream_{m}": _system(data, by_mode[m]) for m in others}
    default_min = _system(data, at_default)
    memstream["at_default_min_relevance"] = {
        "min_relevance": s.min_relevance,
        "overall": default_min["overall"],
        "by_type": default_min["by_type"],
        "failed_recalls": default_min["failed_recalls"],
    }
    baselines = {name: _system(data, answers) for name, answers in base.items()}
    keys = ("overall", "by_type", "by_lang")
    return {
        "bench": "quality",
        "config": {
            "users": users, "sessions": sessions, "seed": seed, "lang": lang,
            "capacity": capacity, "capacity_per_app": s.capacity_per_app, "fusion": fusion,
            "capacity_global": s.capacity_global, "capacity_total": s.capacity_total,
            "app_id": APP, "top_k": TOP_K, "depth": DEPTH, "min_relevance": 0.0,
            "budgets": list(BUDGETS),
            "embedder": env.runtime.embedder.name, "llm": env.runtime.llm.name,
            "turns": len(data.turns()), "content_turns": sum(t.is_content for t in data.turns()),
            "questions": {t: sum(q.type == t for q in questions) for t in TYPES},
        },
        "ingest": ingest,
        "memstream": memstream,
        "session_start": start.summary(),
        "modes": modes,
        "baselines": {**baselines, "seconds": round(baseline_s, 1)},
        "node": node.summary(),  # this process: the ingest flow, the API and the baselines
        "series": {"node": node.samples},
        "ratios": {
            name: quality_metrics.ratios({k: memstream[k] for k in keys}, {k: b[k] for k in keys})
            for name, b in {**modes, **baselines}.items()
        },
        "paired": {
            name: quality_metrics.paired(
                questions, {qid: a.ranked for qid, a in ours.items()},
                {qid: a.ranked for qid, a in answers.items()})
            for name, answers in {**{f"memstream_{m}": by_mode[m] for m in others},
                                  **base}.items()
        },
        "questions": quality_metrics.first_ranks(data.questions(), {
            name: {qid: a.ranked for qid, a in answers.items()}
            for name, answers in {"memstream": ours, **{f"memstream_{m}": by_mode[m]
                                  for m in others}, **base}.items()}),
    }  # fmt: skip
