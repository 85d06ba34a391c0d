"""How ``bench quality`` asks: through ``POST /memory/v1/recall`` over HTTP (uvicorn
in-process, as in the node), once per fusion mode of ``core.ranking``.

The bench sets ``recall_fusion`` on the in-process ``Services`` that the API serves
from (the public API has no such knob) and asks each question in every mode in turn,
after one warm-up recall per user, so the modes answer over the same store in the same
state: one pass per mode let the first mode alone pay the users' cold loads and let the
store move (weights decay with time) between passes, which was enough to flip a
0.005 difference between modes. Deleted questions are asked after ``delete_sources`` removed,
through the API, every memory whose sources hold the deleted turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from core.ranking import FUSIONS
from memstream.schemas.enums import Status
from ops.bench.env import BenchStack
from ops.bench.quality.baselines import DEPTH, Answer
from ops.bench.quality.data import Dataset, Question
from ops.bench.recall import serve_api

APP = "bench"
TOP_K = 10  # the scored k; every recall asks ``DEPTH`` (50) deep for the budget figures


def sources(record: Any) -> list[str]:
    """A stored memory's source msg_ids (``source_msg_ids``, else ``source_msg_id``)."""
    ids = list(getattr(record, "source_msg_ids", None) or [])
    if record.source_msg_id and record.source_msg_id not in ids:
        ids.insert(0, record.source_msg_id)
    return ids


def ask(client: httpx.Client, url: str, q: Question, min_relevance: float | None) -> Answer:
    body: dict[str, Any] = {"user_id": q.user_id, "query": q.query, "top_k": DEPTH,
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


def delete_sources(client: httpx.Client, base: str, data: Dataset, stored: dict) -> dict[str, int]:
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


def modes(configured: str) -> list[str]:
    """The configured fusion first, then the others."""
    return [configured] + [m for m in FUSIONS if m != configured]


def answer_all(
    env: BenchStack, data: Dataset, stored: dict,
    at_start: Callable[[httpx.Client, str], None] | None = None,
) -> tuple[dict[str, dict[str, Answer]], dict[str, Answer], dict[str, int]]:  # fmt: skip
    """Ask through the API, once per fusion mode: every question but the deleted ones at
    min_relevance 0 (the configured mode also at the default); then delete and ask the
    deleted ones. Returns the answers per mode (configured first), the configured mode's
    answers at the default min_relevance, and what was deleted. ``at_start(client,
    base)`` runs first, before any recall (the session-start figures: no recall hit has
    moved a weight yet)."""
    asked = [q for q in data.questions() if q.type != "deleted"]
    app, server, thread, url = serve_api(env)
    services, base = env.runtime.services, env.settings
    order = modes(base.recall_fusion)
    settings = {mode: base.model_copy(update={"recall_fusion": mode}) for mode in order}
    ours: dict[str, dict[str, Answer]]
    try:
        with httpx.Client(timeout=60) as client:
            if at_start is not None:
                at_start(client, url.rsplit("/", 1)[0])
            for user_id in sorted({q.user_id for q in asked}):  # warm: no mode asks cold
                warm = Question("warm", user_id, "en", "single", "warm up", ())
                ask(client, url, warm, 0.0)
            ours = {mode: {} for mode in order}
            for q in asked:  # the modes in turn per question: none sees a later store
                for mode in order:
                    services.settings = settings[mode]
                    ours[mode][q.qid] = ask(client, url, q, 0.0)
            services.settings = base
            at_default = {q.qid: ask(client, url, q, None) for q in asked}
            deleted = delete_sources(client, url.rsplit("/", 1)[0], data, stored)
            for mode in order:
                services.settings = settings[mode]
                for q in data.questions():
                    if q.type == "deleted":
                        ours[mode][q.qid] = ask(client, url, q, 0.0)
    finally:
        services.settings = base
        server.should_exit = True
        thread.join(15)
    return ours, at_default, deleted
