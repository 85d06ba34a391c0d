"""`memstream bench ingest --dataset generated|realmem`: real conversations through Kafka,
and where the ingest time goes (issue 33).

Every session of every user is produced at once to ``memory.conversations`` (each user's
in time order, as a chat platform publishes its transcripts), the ingest flow runs
in-process as in the node, and the run ends when every task is done. Reported:

- turns/s and memories/s (memories written: added + updated) over the wall time from
  the first produce to the last task done, and memories per turn;
- the share of the flow's wall time in each step, from the counters
  ``memstream_ingest_stage_seconds{stage}`` (``core.metrics.ingest_stage``) read before
  and after: what the flow thread spent where, in one process;
- the embedder's own batch rate on the texts it was given (the stored memories' texts,
  batches of 64, the same model in the same process right after): the bound ingest is
  measured against.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from core import metrics
from core.seams import EmbedderLike
from core.settings import Settings
from memstream.schemas.tenants import DEFAULT_TENANT
from ops.bench.env import bench_stack
from ops.bench.ingest import send_events, start_ingest, wait_done
from ops.bench.quality.ask import APP
from ops.bench.sampler import ProcSampler

EMBED_BATCH = 64


def events_of(dataset: str, datasets_dir: Path | None, limit: int | None, users: int,
              sessions: int) -> tuple[list[dict[str, Any]], int]:  # fmt: skip
    """The conversation events of the dataset (each user's in time order, users
    interleaved session by session) and their turn count. ``limit``: the first N
    sessions of each user."""
    if dataset == "generated":
        from ops.bench.quality.data import generate

        per_user = [list(u.events(APP)) for u in generate(users, sessions).users]
    elif dataset == "realmem":
        from ops.bench.quality import realmem as quality_realmem
        from ops.bench.quality.real import default_dir

        data = quality_realmem.load(datasets_dir or default_dir(), None, APP)
        per_user = [[e for e in s if e] for s in data.sessions.values()]
    else:
        raise ValueError(f"bench ingest --dataset: generated or realmem, not {dataset!r}")
    if limit is not None:
        per_user = [s[:limit] for s in per_user]
    events = [s[i] for i in range(max(map(len, per_user), default=0)) for s in per_user
              if i < len(s)]  # fmt: skip
    return events, sum(len(e["messages"]) for e in events)


def stage_seconds() -> dict[str, float]:
    """``memstream_ingest_stage_seconds`` as it stands, per stage."""
    out: dict[str, float] = {}
    for family in metrics.INGEST_STAGE.collect():
        for sample in family.samples:
            if sample.name.endswith("_total"):
                out[sample.labels["stage"]] = sample.value
    return out


def shares(before: dict[str, float], after: dict[str, float], wall: float) -> dict[str, Any]:
    spent = {k: after[k] - before.get(k, 0.0) for k in after}
    spent = {k: v for k, v in spent.items() if v > 0}
    total = sum(spent.values())
    return {
        "seconds": {k: round(v, 2) for k, v in sorted(spent.items(), key=lambda kv: -kv[1])},
        "share_of_steps": {k: round(v / total, 3) for k, v in spent.items()} if total else {},
        "steps_s": round(total, 2),
        "wall_s": round(wall, 2),
    }


def embed_rate(embedder: EmbedderLike, texts: list[str], repeats: int = 3) -> dict[str, Any]:
    """The embedder alone on ``texts``, ``EMBED_BATCH`` at a time: passages/s, the best
    of ``repeats`` runs (single runs on the same texts moved from 290 to 430/s here, and
    the best of two from 339 to 475/s between runs of one commit)."""
    runs = []
    for _ in range(max(1, repeats)):
        started = time.perf_counter()
        for i in range(0, len(texts), EMBED_BATCH):
            embedder.embed(texts[i : i + EMBED_BATCH])
        runs.append(time.perf_counter() - started)
    seconds = min(runs)
    return {"texts": len(texts), "seconds": round(seconds, 2),
            "per_s": round(len(texts) / max(seconds, 1e-6), 1),
            "runs_per_s": [round(len(texts) / max(s, 1e-6), 1) for s in runs]}  # fmt: skip


def bench_ingest_data(
    settings: Settings,
    dataset: str,
    datasets_dir: Path | None = None,
    limit: int | None = None,
    users: int = 8,
    sessions: int = 8,
    capacity: dict[str, Any] | None = None,  # Settings overrides
    workers: int = 1,
) -> dict[str, Any]:
    events, turns = events_of(dataset, datasets_dir, limit, users, sessions)
    if not events:
        raise ValueError("the dataset gave no conversation")
    with bench_stack(settings, **(capacity or {})) as env:
        flow = start_ingest(env, workers)
        try:
            warm = [{"task_id": "warm-0", "user_id": 1, "app_id": "warm",
                     "messages": [{"role": "user", "content": "I live in Lisbon."}]}]  # fmt: skip
            wait_done(env, send_events(env, warm), 60)
            before = stage_seconds()
            with ProcSampler() as node:
                sent = send_events(env, events)
                done = wait_done(env, sent, timeout=600 + 0.5 * turns)
            after = stage_seconds()
        finally:
            flow.stop()
        results = list(done["results"].values())
        first = min(sent.values())
        finished = max((r["updated_at"] for r in results), default=time.time())
        wall = max(finished - first, 1e-6)
        counts: dict[str, int] = {}
        for r in results:
            for k, v in (r.get("counts") or {}).items():
                counts[k] = counts.get(k, 0) + v
        written = counts.get("added", 0) + counts.get("updated", 0)
        user_ids = sorted({e["user_id"] for e in events})
        stored = env.runtime.memories.load_many(user_ids, tenant=DEFAULT_TENANT)
        texts = [m.content for m in stored]
        rt = env.runtime
    # the stores stopped: their work after a flow (Milvus Lite's, chDB's) takes no core
    # (measured inside, the embedder alone read 186–265/s on the same texts in one hour)
    bound = embed_rate(rt.embedder, texts)
    per_s = written / wall
    return {
        "bench": "ingest",
        "dataset": dataset,
        "capacity": capacity or "default",
        "workers": workers,
        "users": len(user_ids),
        "tasks": len(sent),
        "turns": turns,
        "failed_tasks": sum(1 for r in results if r["status"] == "failed"),
        "failed_reasons": sorted(
            {str(r.get("reason"))[:300] for r in results if r["status"] == "failed"}
        )[:10],  # fmt: skip
        "missing_tasks": done["missing"],
        "elapsed_s": round(wall, 2),
        "turns_per_s": round(turns / wall, 1),
        "memories_written": written,
        "memories_per_s": round(per_s, 1),
        "memories_per_turn": round(written / max(turns, 1), 3),
        "counts": counts,
        "stages": shares(before, after, wall),
        "embedder_batch": bound,
        "memories_per_s_vs_embedder": round(per_s / max(bound["per_s"], 1e-6), 3),
        "embedder": rt.embedder.name,
        "traces": env.traces,  # otel_endpoint set (docs/operations.md#traces)
        "llm": rt.llm.name,
        "node": node.summary(),
    }
