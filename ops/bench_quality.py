"""`memstream bench quality`: how much of what was said memstream finds again.

On a throw-away local stack (``ops.bench_env``) with the configured extractor and
embedder: ``ops.quality_data`` generates seeded two-person chats (English and Chinese)
with evidence-labelled questions; every session goes in as one event through the real
Kafka path (``memory.conversations``, ``app_id`` "bench" so the per-app capacity of
DESIGN §7 applies) to the ingest flow running in-process; answers come through
``POST /memory/v1/recall`` over HTTP (uvicorn in-process, as in the node).

Recall asks ``top_k=10`` with ``min_relevance=0``: the bench measures the ranking, not
the threshold; a second pass at the configured ``min_relevance`` reports how much the
threshold drops. Deleted questions come last: the bench deletes (``POST
/memory/v1/delete``) every memory whose sources hold the turn, then asks. The same
questions go to two raw-turn baselines (``ops.quality_baselines``); the scores are
``ops.quality_metrics``.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from core.settings import Settings
from ops import quality_baselines, quality_metrics
from ops.bench_env import BenchStack, bench_stack, percentiles
from ops.bench_ingest import send_events, start_ingest, wait_done
from ops.bench_recall import serve_api
from ops.quality_baselines import Answer
from ops.quality_data import TYPES, Dataset, Question, generate
from schemas.enums import Status

APP = "bench"
TOP_K = 10
LIFTED = 1_000_000  # "lifted": nothing is evicted or consolidated


def _say(message: str) -> None:
    print(f"bench quality: {message}", file=sys.stderr, flush=True)


def capacity_overrides(capacity: str) -> dict[str, int]:
    """``default`` (the settings as they are), ``lifted``, or a per-app limit N."""
    if capacity == "default":
        return {}
    if capacity == "lifted":
        return {"capacity_per_app": LIFTED, "capacity_global": LIFTED, "capacity_total": LIFTED}
    return {"capacity_per_app": int(capacity)}


def sources(record: Any) -> list[str]:
    """A stored memory's source msg_ids (``source_msg_ids``, else ``source_msg_id``)."""
    ids = list(getattr(record, "source_msg_ids", None) or [])
    if record.source_msg_id and record.source_msg_id not in ids:
        ids.insert(0, record.source_msg_id)
    return ids


def _ask(client: httpx.Client, url: str, q: Question, min_relevance: float | None) -> Answer:
    body: dict[str, Any] = {"user_id": q.user_id, "query": q.query, "top_k": TOP_K,
                            "scope": {"include_global": True, "app_id": APP}}  # fmt: skip
    if min_relevance is not None:
        body["min_relevance"] = min_relevance
    started = time.perf_counter()
    reply = client.post(url, json=body).json()
    ms = (time.perf_counter() - started) * 1000
    items = (reply.get("data") or {}).get("memories") or []
    ranked = [[m for m in (i["source"].get("msg_ids") or [i["source"].get("msg_id")]) if m]
              for i in items]  # a recalled item's source turns  # fmt: skip
    contents = [i["content"] for i in items]
    return Answer(ranked, contents, ms, int(reply.get("code", -1)))


def _delete(client: httpx.Client, base: str, data: Dataset, stored: dict) -> dict[str, int]:
    """Delete, through the API, every memory that came from a deleted question's turn."""
    jobs, turns = [], 0
    for q in data.questions():
        if q.type == "deleted":
            mine = [r for r in stored[q.user_id] if q.evidence[0] in sources(r)]
            mine = [r for r in mine if r.status is not Status.DELETED]
            turns += bool(mine)
            jobs += [{"user_id": q.user_id, "memory_id": r.memory_id} for r in mine]
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda b: client.post(f"{base}/delete", json=b).json(), jobs))
    return {"turns_with_memories": turns, "memories": sum(1 for c in codes if c.get("code") == 0)}


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
                                                   answers[q.qid].ranked))
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


def _answer(
    env: BenchStack, data: Dataset, stored: dict
) -> tuple[dict[str, Answer], dict[str, Answer], dict[str, int]]:
    """Ask through the API: every question but the deleted ones at min_relevance 0 and
    at the default; then delete and ask the deleted ones. Returns both answer sets (the
    first with the deleted questions) and what was deleted."""
    asked = [q for q in data.questions() if q.type != "deleted"]
    _app, server, thread, url = serve_api(env)
    try:
        with httpx.Client(timeout=60) as client:
            ours = {q.qid: _ask(client, url, q, 0.0) for q in asked}
            at_default = {q.qid: _ask(client, url, q, None) for q in asked}
            deleted = _delete(client, url.rsplit("/", 1)[0], data, stored)
            for q in data.questions():
                if q.type == "deleted":
                    ours[q.qid] = _ask(client, url, q, 0.0)
    finally:
        server.should_exit = True
        thread.join(15)
    return ours, at_default, deleted


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
    with bench_stack(settings, **overrides) as env:
        flow = start_ingest(env)
        try:
            _say(f"ingesting {len(data.turns())} turns in {len(data.users) * sessions} sessions")
            ingest = _ingest(env, data)
            _say(f"ingested in {ingest['seconds']} s; asking {len(questions)} questions")
            stored = {u.user_id: env.runtime.memories.load(u.user_id) for u in data.users}
            ours, at_default, deleted = _answer(env, data, stored)
        finally:
            flow.stop()
        _say("raw-turn baselines (bm25, dense)")
        started = time.monotonic()
        base = {"bm25": quality_baselines.bm25(data)}
        base["dense"] = quality_baselines.dense(data, env.runtime.embedder)
        baseline_s = time.monotonic() - started
        s = env.settings
    memstream = _memstream(data, ours, stored)
    memstream["deleted"] = deleted
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
            "capacity": capacity, "capacity_per_app": s.capacity_per_app,
            "capacity_global": s.capacity_global, "capacity_total": s.capacity_total,
            "app_id": APP, "top_k": TOP_K, "min_relevance": 0.0,
            "embedder": env.runtime.embedder.name, "llm": env.runtime.llm.name,
            "turns": len(data.turns()), "content_turns": sum(t.is_content for t in data.turns()),
            "questions": {t: sum(q.type == t for q in questions) for t in TYPES},
        },
        "ingest": ingest,
        "memstream": memstream,
        "baselines": {**baselines, "seconds": round(baseline_s, 1)},
        "ratios": {
            name: quality_metrics.ratios({k: memstream[k] for k in keys}, {k: b[k] for k in keys})
            for name, b in baselines.items()
        },
        "questions": quality_metrics.first_ranks(data.questions(), {
            name: {qid: a.ranked for qid, a in answers.items()}
            for name, answers in {"memstream": ours, **base}.items()}),
    }  # fmt: skip


def write_json(result: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = out_dir / f"quality-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
