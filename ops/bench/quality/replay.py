"""``bench quality --dataset realmem|madial-zh|madial-en``: public conversations replayed
through memstream as a client would, scored next to raw-text baselines (issue 32).

On a throw-away local stack (``ops.bench.env``) with the configured extractor and
embedder, the ingest flow in-process and the API over HTTP (uvicorn in-process):

- RealMem: every persona's sessions are produced to ``memory.conversations`` (``app_id``
  "bench") in time order; each question is asked when exactly the sessions before it
  are in: the bench sends every user's sessions up to the next question's point, waits
  until they are done, asks the questions of that point, and so on;
- MADial-Bench: every user's memories are written with ``POST
  /memory/v1/add_structured`` in date order, then every question is asked.

Every question goes to ``POST /memory/v1/recall`` (top ``DEPTH``, ``min_relevance`` 0,
the configured fusion) and to the raw-text baselines of ``ops.bench.quality.baselines`` (BM25,
dense, RRF hybrid) over the same texts, the same visible part; each system is scored
with ``ops.bench.quality.metrics`` (recall@k and the budget figures of ``ops.bench.quality.budget``).
Before a point's questions (MADial: before every question) each user's session-start
context is scored against them (``ops.bench.quality.session_start``).
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from core.settings import Settings
from memstream.schemas.tenants import DEFAULT_TENANT
from ops.bench.env import BenchStack, bench_stack, percentiles
from ops.bench.ingest import send_events, start_ingest, wait_done
from ops.bench.quality import baselines as quality_baselines
from ops.bench.quality.ask import APP, TOP_K
from ops.bench.quality.baselines import DEPTH, Answer
from ops.bench.quality.budget import BUDGETS
from ops.bench.quality.data import Question
from ops.bench.quality.generated import capacity_overrides
from ops.bench.quality.metrics import first_ranks, paired, ratios, recalled_chars, score, summarize
from ops.bench.quality.real import Replay
from ops.bench.quality.session_start import SessionStart
from ops.bench.recall import serve_api
from ops.bench.sampler import ProcSampler


def _say(message: str) -> None:
    print(f"bench quality: {message}", file=sys.stderr, flush=True)


def _ask(client: httpx.Client, url: str, q: Question, ids: dict[str, list[str]]) -> Answer:
    """One recall; a result's evidence ids: its source msg_ids, or (MADial) the dataset
    ids its memory was stored for (``ids``: memory_id -> dataset ids)."""
    body = {"user_id": q.user_id, "query": q.query, "top_k": DEPTH, "min_relevance": 0.0,
            "scope": {"include_global": True, "app_id": APP}}  # fmt: skip
    started = time.perf_counter()
    reply = client.post(url, json=body).json()
    ms = (time.perf_counter() - started) * 1000
    items = (reply.get("data") or {}).get("memories") or []
    ranked = []
    for i in items:
        if ids:
            ranked.append(list(ids.get(i["memory_id"], [])))
        else:
            src = i.get("source") or {}
            ranked.append([m for m in (src.get("msg_ids") or [src.get("msg_id")]) if m])
    return Answer(ranked, [i["content"] for i in items], ms, int(reply.get("code", -1)))


def _sessions(
    env: BenchStack, data: Replay, client: httpx.Client, url: str, start: SessionStart
) -> tuple:
    """RealMem: send, wait, score the session starts, ask, point by point. Returns
    (answers, ingest summary)."""
    answers: dict[str, Answer] = {}
    base = url.rsplit("/", 1)[0]
    points = sorted(set(data.after.values()))
    sent_upto, sent, results, waited = 0, {}, {}, 0.0
    for point in points:
        batch = [e for s in data.sessions.values() for e in s[sent_upto:point] if e]
        if batch:
            started = time.monotonic()
            now = send_events(env, batch)
            done = wait_done(env, now, timeout=300 + 2.0 * sum(len(e["messages"]) for e in batch))
            sent.update(now)
            results.update(done["results"])
            waited += time.monotonic() - started
        sent_upto = point
        asked = [q for q in data.questions if data.after[q.qid] == point]
        _say(f"{point} sessions per user in ({len(sent)} in all): asking {len(asked)}")
        for uid in sorted({q.user_id for q in asked}):  # the session starts, before recall
            mine = [q for q in asked if q.user_id == uid]
            start.measure(client, base, uid, mine, data.docs[uid], data.visible[mine[0].qid])
        for q in asked:
            answers[q.qid] = _ask(client, url, q, {})
    turns = sum(len(e["messages"]) for s in data.sessions.values() for e in s[:sent_upto] if e)
    counts: dict[str, int] = {}
    for r in results.values():
        for k, v in (r.get("counts") or {}).items():
            counts[k] = counts.get(k, 0) + v
    return answers, {
        "tasks": len(sent), "turns": turns,
        "failed_tasks": sum(1 for r in results.values() if r["status"] == "failed"),
        "missing_tasks": len(sent) - len(results), "seconds": round(waited, 2),
        "turns_per_s": round(turns / max(1e-6, waited), 1), "counts": counts,
    }  # fmt: skip


def _memories(data: Replay, client: httpx.Client, url: str, start: SessionStart) -> tuple:
    """MADial: add_structured every memory (users in parallel, each in date order), score
    each user's session start, ask."""
    base = url.rsplit("/", 1)[0]
    ids: dict[str, list[str]] = {}
    codes: dict[str, int] = {}

    def write(uid: int) -> None:
        for mid, text, day in data.memories.get(uid, []):
            body = {"user_id": uid, "app_id": APP, "content": text,
                    "custom_tags": {"dataset_id": mid, "time": day}}  # fmt: skip
            reply = client.post(f"{base}/add_structured", json=body).json()
            code = int(reply.get("code", -1))
            codes[str(code)] = codes.get(str(code), 0) + 1
            if code == 0:
                ids.setdefault(reply["data"]["memory_id"], []).append(mid)

    started = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, list(data.memories)))
    seconds = time.monotonic() - started
    n = sum(len(v) for v in data.memories.values())
    for uid in data.users:
        mine = [q for q in data.questions if q.user_id == uid]
        start.measure(client, base, uid, mine, data.docs.get(uid, []), None, ids)
    answers = {q.qid: _ask(client, url, q, ids) for q in data.questions}
    return answers, {
        "tasks": n, "turns": n, "failed_tasks": n - codes.get("0", 0), "missing_tasks": 0,
        "seconds": round(seconds, 2), "turns_per_s": round(n / max(1e-6, seconds), 1),
        "add_structured_codes": codes,
    }  # fmt: skip


def _system(data: Replay, answers: dict[str, Answer]) -> dict[str, Any]:
    rows = [(q.lang, q.type, score(q.type, q.evidence, (), answers[q.qid].ranked,
                                   answers[q.qid].contents))
            for q in data.questions if q.qid in answers]  # fmt: skip
    out = summarize(rows)
    out["recalled_chars_mean"] = recalled_chars([a.contents for a in answers.values()])
    out["recall_ms"] = {k: round(v, 2) for k, v in
                        percentiles([a.ms for a in answers.values()], (50, 99)).items()}  # fmt: skip
    failed = [str(a.code) for a in answers.values() if a.code != 0]
    out["failed_recalls"] = {c: failed.count(c) for c in sorted(set(failed))}
    return out


def bench_replay(
    settings: Settings, data: Replay, capacity: str = "default", limit: int | None = None
) -> dict[str, Any]:
    start = SessionStart(APP)
    with bench_stack(settings, **capacity_overrides(capacity)) as env, ProcSampler() as node:
        flow = start_ingest(env)
        app, server, thread, url = serve_api(env)
        try:
            with httpx.Client(timeout=120) as client:
                if data.sessions:
                    answers, ingest = _sessions(env, data, client, url, start)
                else:
                    answers, ingest = _memories(data, client, url, start)
        finally:
            server.should_exit = True
            thread.join(15)
            flow.stop()
        stored = [
            r for u in data.users for r in env.runtime.memories.load(u, tenant=DEFAULT_TENANT)
        ]
        _say("raw-text baselines (bm25, dense, hybrid)")
        started = time.monotonic()
        base = quality_baselines.rank(data.docs, data.asks(), env.runtime.embedder)
        baseline_s = time.monotonic() - started
        s, embedder, llm = env.settings, env.runtime.embedder.name, env.runtime.llm.name
    memstream = _system(data, answers)
    status = [r.status.value for r in stored]
    memstream["memories_by_status"] = {v: status.count(v) for v in sorted(set(status))}
    baselines = {name: _system(data, a) for name, a in base.items()}
    keys = ("overall", "by_type", "by_lang")
    systems = {"memstream": answers, **base}
    return {
        "bench": "quality",
        "config": {
            "dataset": data.name, "limit": limit, "users": len(data.users),
            "sessions": max((len(v) for v in data.sessions.values()), default=0),
            "lang": data.lang, "turns": ingest["turns"], "content_turns": ingest["turns"],
            "capacity": capacity, "capacity_per_app": s.capacity_per_app,
            "capacity_global": s.capacity_global, "capacity_total": s.capacity_total,
            "fusion": s.recall_fusion, "app_id": APP, "top_k": TOP_K, "depth": DEPTH,
            "min_relevance": 0.0, "budgets": list(BUDGETS), "embedder": embedder, "llm": llm,
            "questions": data.types(),
        },
        "ingest": ingest,
        "memstream": memstream,
        "session_start": start.summary(),
        "modes": {},
        "baselines": {**baselines, "seconds": round(baseline_s, 1)},
        "node": node.summary(),
        "series": {"node": node.samples},
        "ratios": {n: ratios({k: memstream[k] for k in keys}, {k: b[k] for k in keys})
                   for n, b in baselines.items()},  # fmt: skip
        "paired": {n: paired(data.questions, {q: a.ranked for q, a in answers.items()},
                             {q: a.ranked for q, a in b.items()}) for n, b in base.items()},
        "questions": first_ranks(data.questions, {
            n: {q: a.ranked for q, a in b.items()} for n, b in systems.items()}),
    }  # fmt: skip
