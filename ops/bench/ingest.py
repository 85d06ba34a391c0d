"""`memstream bench ingest`: Kafka → stores throughput and add→recallable freshness.

Two phases on a fresh local stack with the configured providers (default: rules LLM,
multilingual-e5-small embedder), the ingest flow running in-process as in the node:

1. saturation — N conversations (2 user turns, 2 facts each, many users) produced as
   fast as Kafka takes them; throughput = facts stored / (last task done − first produce);
2. freshness — conversations at a fixed rate well under saturation; per task, the time
   from produce to "done". A task is done only after its memories are in ClickHouse and
   Milvus and the hot cache, i.e. durable and recallable, so done time is add→recallable
   time. The event carries no ``ts``: its event time is the moment it is produced.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable, Iterator
from typing import Any

from confluent_kafka import Producer

from core.settings import Settings
from dataflows.ingest.flow import build_flow
from dataflows.ingest.shards import WorkerCounts
from dataflows.runner import FlowThread
from memstream.schemas.events import TOPIC_CONVERSATIONS
from memstream.schemas.tenants import DEFAULT_TENANT
from ops.bench.env import BenchStack, bench_stack, percentiles, rate_series
from ops.bench.sampler import ProcSampler
from sinks.tasks import TaskStatusRow

CITIES = ["Lisbon", "Porto", "Madrid", "Berlin", "Osaka", "Lima", "Quito", "Oslo", "Cairo", "Perth"]
FOODS = ["sushi", "ramen", "tacos", "paella", "pho", "curry", "dumplings", "falafel"]
JOBS = ["nurse", "carpenter", "teacher", "pilot", "chef", "lawyer", "architect", "farmer"]
PETS = ["dog", "cat", "parrot", "rabbit", "turtle", "hamster"]
NAMES = ["Luna", "Max", "Kiwi", "Oscar", "Mochi", "Biscuit", "Pepper", "Nala"]


def _turns(rng: random.Random) -> list[str]:
    """Two first-person facts; numbers and names make nearly every text unique."""
    n = rng.randint(2, 400)
    pool = [
        f"I live in {rng.choice(CITIES)} at number {n} of the old street.",
        f"My favourite food is {rng.choice(FOODS)} with {n} grams of {rng.choice(FOODS)}.",
        f"I work as a {rng.choice(JOBS)} for a company with {n} employees.",
        f"I have a {rng.choice(PETS)} named {rng.choice(NAMES)} who is {n % 20 + 1} years old.",
        f"I started learning {rng.choice(['piano', 'Spanish', 'chess', 'pottery'])} in "
        f"{rng.randint(1990, 2025)} and practise {n % 9 + 1} hours a week.",
    ]
    return rng.sample(pool, 2)


def _produce(
    env: BenchStack, n: int, users: int, rate: float | None, seed: int, tag: str
) -> dict[str, float]:
    rng = random.Random(seed)

    def events() -> Iterator[dict[str, Any]]:
        for i in range(n):
            user = 1_000_000 + rng.randrange(users)
            task = f"{tag}-{i}"
            yield {
                "task_id": task,
                "user_id": user,
                "messages": [
                    {"role": "user", "content": t, "msg_id": f"{task}-{j}"}
                    for j, t in enumerate(_turns(rng))
                ],
            }

    return send_events(env, events(), rate)


def send_events(
    env: BenchStack, events: Iterable[dict[str, Any]], rate: float | None = None
) -> dict[str, float]:
    """Produce conversation events (each with ``task_id`` and ``user_id``) to
    ``memory.conversations`` with a real producer, keyed by user; ``rate`` events/s or
    as fast as Kafka takes them. Returns task_id → time sent (epoch seconds)."""
    producer = Producer(env.stores.kafka.client_config({"linger.ms": 2}))
    topic = env.stores.kafka.topic(TOPIC_CONVERSATIONS)
    sent: dict[str, float] = {}
    start = time.perf_counter()
    for i, event in enumerate(events):
        if rate:
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        user = event["user_id"]
        sent[event["task_id"]] = time.time()
        producer.produce(topic, key=str(user).encode(), value=json.dumps(event).encode())
        producer.poll(0)
    producer.flush(60)
    return sent


def wait_done(
    env: BenchStack, sent: dict[str, float], timeout: float, poll_s: float = 2.0
) -> dict[str, Any]:
    """Task statuses once every task of ``sent`` is done or failed (or ``timeout`` s):
    ``{"results": {task_id: status}, "missing": n}``."""
    deadline = time.monotonic() + timeout
    results: dict[str, TaskStatusRow] = {}
    pending = list(sent)  # in send order: the oldest finish first
    # The poller shares the process (and the GIL) with the flow it measures, so it asks
    # for the oldest ``chunk`` pending tasks only, and for the next ones at once while
    # those are all done: one small pipelined round trip per poll while the flow works,
    # not thousands. Poll timing does not move the numbers: "done" times are the sink's
    # own timestamps.
    chunk = 200
    while pending and time.monotonic() < deadline:
        asked = pending[:chunk]
        found = env.runtime.tasks.get_many(asked, tenant=DEFAULT_TENANT)
        finished = {t for t, st in found.items() if st["status"] in ("done", "failed")}
        results.update((t, found[t]) for t in finished)
        pending = [t for t in pending if t not in finished]
        if pending and len(finished) < len(asked):
            time.sleep(poll_s)
    if pending:  # out of time: the last word on every task still pending
        found = env.runtime.tasks.get_many(pending, tenant=DEFAULT_TENANT)
        results.update((t, st) for t, st in found.items() if st["status"] in ("done", "failed"))
        pending = [t for t in pending if t not in results]
    return {"results": results, "missing": len(pending)}


def start_ingest(
    env: BenchStack, workers: int = 1, embedded: WorkerCounts | None = None
) -> FlowThread:
    """The ingest flow running in a thread of this process, as in the node (``workers``
    Bytewax workers; the node runs 1); model warm. ``embedded`` counts facts per worker."""
    flow = FlowThread(
        "ingest",
        lambda: build_flow(env.runtime, workers=workers, embedded=embedded),
        env.data_dir,
        stop=env.runtime.stop,
        on_failure=env.runtime.cache.clear,
        workers=workers,
    )
    flow.start()
    env.runtime.embedder.embed(["warm up the model"])
    return flow


def bench_ingest(
    settings: Settings,
    conversations: int = 3000,
    users: int = 2000,
    rate: float = 40.0,
    freshness_n: int = 400,
    workers: int = 1,
) -> dict[str, Any]:
    """Both phases; ``node``: this process's CPU and RSS per phase (the flow runs here);
    ``series``: conversations done per second in the saturation phase, every freshness
    latency, and the CPU/RSS samples: the report's charts."""
    embedded = WorkerCounts()
    with bench_stack(settings) as env:
        flow = start_ingest(env, workers, embedded)
        wait_done(env, _produce(env, 20, users, None, 1, "warm"), 60)

        with ProcSampler() as node_sat:
            sent = _produce(env, conversations, users, None, 2, "sat")
            done = wait_done(env, sent, 900)
        results = done["results"].values()
        first = min(sent.values())
        finished = max((r["updated_at"] for r in results), default=time.time())
        elapsed = finished - first
        facts = sum(
            r.get("counts", {}).get("added", 0) + r.get("counts", {}).get("updated", 0)
            for r in results
        )

        with ProcSampler() as node_fresh:
            fresh_sent = _produce(env, freshness_n, users, rate, 3, "fresh")
            fresh = wait_done(env, fresh_sent, 300)
        lat = [(r["updated_at"] - fresh_sent[t]) * 1000 for t, r in fresh["results"].items()]
        flow.stop()
        return {
            "bench": "ingest",
            "workers": workers,
            # facts each worker embedded (warm-up, saturation and freshness phases)
            "embedded_by_worker": {str(w): n for w, n in embedded.snapshot().items()},
            "conversations": conversations,
            "elapsed_s": round(elapsed, 2),
            "conversations_per_s": round(len(results) / elapsed, 1),
            "facts_stored": facts,
            "facts_per_s": round(facts / elapsed, 1),
            "failed_tasks": sum(1 for r in results if r["status"] == "failed"),
            "missing_tasks": done["missing"] + fresh["missing"],
            "freshness_rate_per_s": rate,
            **{f"freshness_{k}_ms": round(v, 1) for k, v in percentiles(lat).items()},
            "freshness_max_ms": round(max(lat, default=0.0), 1),
            "embedder": env.runtime.embedder.name,
            "traces": env.traces,  # otel_endpoint set (docs/operations.md#traces)
            "llm": env.runtime.llm.name,
            "node": {"saturation": node_sat.summary(), "freshness": node_fresh.summary()},
            "series": {
                "done_per_s": rate_series(
                    [r["updated_at"] for r in results], first, max(1.0, elapsed / 60)
                ),
                "freshness_ms": [round(x, 1) for x in sorted(lat)],
                "node_saturation": node_sat.samples,
                "node_freshness": node_fresh.samples,
            },
        }
