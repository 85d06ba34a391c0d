"""`memstream bench recall`: recall latency and throughput through the real HTTP API.

On a throw-away local stack (``ops.bench.env``: Kafka, Redis, chDB, Milvus Lite, the
configured embedder) it seeds ``users × memories`` short English facts through
``MemoryStore.write`` (ClickHouse + Milvus, 10k rows a round trip), warms the hot
cache, serves the API with uvicorn in a thread of this process — exactly the node's
setup — and drives ``POST /memory/v1/recall`` from a separate load-generator process
(so the clients do not share the server's GIL) with ``clients`` concurrent HTTP clients:
at a fixed ``rate`` (open loop: latency counts from each request's scheduled time, so
queueing shows) or saturating (``rate=None``: every client sends back to back).

``paged`` (``--paged N``) gives every user N paged-out memories besides the active
ones (ARCHIVED by the capacity, still worth keeping: ``core.capacity.paged_out``), which
default recall searches beside the active ones: what they cost.

Seeding embeds a pool of at most ``pool`` (5,000) distinct facts once and gives every
user ``memories`` distinct facts drawn from it; 200k separate embeddings would take
~9 minutes on two cores and measure the embedder, not recall. Queries are generated
per request from 17 question templates × entities (~2,300 distinct texts), so the
query-embedding cache sees realistic repeats: each phase reports its
``query_cache_hit_ratio`` (a first phase meets a cold cache; repeat ``--rate 50`` after
``--rate max`` to see the warm case). Before the first phase it waits until the process
is idle (``settle_s``): Milvus Lite builds its index in the background after the load.

The hot cache keeps the configured budget (``hot_cache_budget_mb``), so when the users
outnumber it recalls meet cold users, as in production; ``fit_cache`` sizes it to hold
every seeded user (~1 KB a memory, 1.25 KB allowed: ``core.user_index``), the best case.
Traffic: users drawn uniformly, or by Zipf popularity (``zipf`` = s: the r-th most
popular user is asked ∝ 1/r^s), each making ``session_len`` recalls in a row (the first
may be cold, the rest find it loaded). Each phase reports, beside latency and codes
(50401: timed out), the hot cache's hit ratio, its cold loads (count and latency percentiles, from ``HotCache.load_ms``; how many came
from a Redis snapshot), how many users it held at the end, and this process's CPU and
RSS (``node``: the server's; the load generator is another process). Each phase goes on along
the traffic where the previous one stopped (a phase that started over would ask the
users the previous phase just loaded).

``context`` (on by default): after each recall phase, the same rate, clients and
duration drive ``POST /memory/v1/context`` (docs/api.md#context) with the next users of
the traffic, each asking with its question as the last user turn and a 2,000-character
budget; the phase's ``context`` holds its latency percentiles, codes and
``p99_over_recall`` (the issue's target: the context call's p99 at most twice recall's,
same rate, same run).
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import uvicorn

from core.derived import next_profile, scopes
from core.hashing import content_hash, stable_id
from core.settings import Settings
from core.write_batch import WriteBatch
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.tenants import DEFAULT_TENANT, UserKey
from ops.bench.driver import drive
from ops.bench.env import BenchStack, bench_stack, percentiles
from ops.bench.sampler import ProcSampler
from ops.procs import free_port
from recall_api.app import create_app
from recall_api.state import api_state
from sinks import keystore

APP = "chat"
RELATIONS = "sister|brother|mother|father|best friend|cousin|boss|aunt".split("|")
CITIES = "Berlin Lisbon Osaka Lima Oslo Cairo Perth Denver Quito Hanoi Dublin Seoul".split()
FOODS = "peanuts shellfish gluten sushi ramen tacos paella curry falafel pho lasagna".split()
JOBS = "nurse|carpenter|teacher|pilot|chef|lawyer|architect|farmer|data analyst".split("|")
PETS, NAMES = "dog cat parrot rabbit turtle".split(), "Luna Max Kiwi Oscar Mochi Nala".split()
SKILLS = "piano Spanish chess pottery surfing Japanese climbing guitar".split()
DRINKS = "green tea|espresso|oat latte|black coffee|chai|orange juice".split("|")
TEAMS = {"football": "Arsenal", "basketball": "the Lakers", "hockey": "the Oilers"}
DAYS = "Mondays Tuesdays Wednesdays Thursdays Fridays weekends".split()
MONTHS = "January March May July September November".split()


def _fact(rng: random.Random) -> tuple[str, MemType]:
    """One short first-person fact; the slots allow ~7,000 distinct texts."""
    rel, city, food, food2 = (rng.choice(RELATIONS), rng.choice(CITIES), *rng.sample(FOODS, 2))
    sport, year = rng.choice(list(TEAMS)), rng.randint(2005, 2024)
    return rng.choice([
        (f"My {rel} lives in {city} and works as a {rng.choice(JOBS)}.", MemType.SEMANTIC),
        (f"I am allergic to {food} and avoid {food2}.", MemType.SEMANTIC),
        (f"I have a {rng.choice(PETS)} named {rng.choice(NAMES)} who is {rng.randint(1, 15)} "
         "years old.", MemType.SEMANTIC),
        (f"I am learning {rng.choice(SKILLS)} on {rng.choice(DAYS)} at {rng.randint(5, 9)} pm.",
         MemType.PROCEDURAL),
        (f"My {rel}'s birthday is on {rng.choice(MONTHS)} {rng.randint(1, 28)}.", MemType.SEMANTIC),
        (f"I usually drink {rng.choice(DRINKS)} at {rng.randint(6, 10)} am.", MemType.PROCEDURAL),
        (f"I have supported {TEAMS[sport]} in {sport} since {year}.", MemType.SEMANTIC),
        (f"In {year} I travelled to {city} with my {rel}.", MemType.EPISODIC),
        (f"I prefer {food} over {food2} for dinner.", MemType.SEMANTIC),
    ])  # fmt: skip


PREFIXES = ("", "Hey, ", "Quick question: ", "Remind me: ")


def _query(rng: random.Random) -> str:
    """A question an agent might recall for; ~2,300 distinct texts."""
    rel, city, food, year = rng.choice(RELATIONS), rng.choice(CITIES), rng.choice(FOODS), rng.randint(2005, 2024)  # fmt: skip
    return rng.choice(PREFIXES) + rng.choice([
        f"Where does my {rel} live?", f"Have I ever been to {city}?", "What am I allergic to?",
        f"Can I eat {food}?", f"What does my {rel} do for work?", "What are my pets called?",
        f"When is my {rel}'s birthday?", "What do I drink in the morning?",
        f"Which {rng.choice(list(TEAMS))} team do I support?", f"Am I learning {rng.choice(SKILLS)}?",
        f"Suggest a restaurant in {city} for dinner", f"Plan a trip to {city} with my {rel}",
        f"What did I do in {year}?", f"Did I go to {city} in {year}?",
        f"Is my {rng.choice(PETS)} called {rng.choice(NAMES)}?",
        f"What should I cook for my {rel} tonight?",
        f"Book a table in {city} for {rng.randint(2, 9)} people",
    ])  # fmt: skip


def seed(
    env: BenchStack, users: int, memories: int, pool: int, rng: random.Random, paged: int = 0
) -> tuple[list[int], int]:
    """Write users × memories records (vectors from an embedded fact pool), and per user
    ``paged`` more, ARCHIVED by the capacity (paged out: their weight well above the
    archive threshold, archived a few days ago).

    Returns the user ids and the number of distinct facts embedded.
    """
    per_user = memories + paged
    texts: dict[str, MemType] = {}
    for _ in range(pool * 50):  # the templates allow far more than 5,000 distinct facts
        if len(texts) >= min(pool, users * per_user):
            break
        text, kind = _fact(rng)
        texts.setdefault(text, kind)
    facts = list(texts.items())
    vectors = env.runtime.embedder.embed([t for t, _ in facts])
    now = datetime.now(UTC)
    user_ids = [10_000_000 + i for i in range(users)]
    batch = WriteBatch()
    for uid in user_ids:
        mine: list[MemoryRecord] = []
        for n, j in enumerate(rng.sample(range(len(facts)), min(per_user, len(facts)))):
            text, kind = facts[j]
            at = now - timedelta(days=rng.uniform(0, 60))
            out = n >= memories  # paged out: evicted for room a few days ago
            if out:
                at = now - timedelta(days=rng.uniform(1, 10))
            rec = MemoryRecord(
                memory_id=stable_id("m_", uid, j),
                user_id=uid,
                content=text,
                content_hash=content_hash(text),
                level=Level.APP if j % 4 == 0 else Level.GLOBAL,
                app_id=APP if j % 4 == 0 else None,
                ownership=Ownership.USER,
                mem_type=kind,
                weight=rng.choice((0.6, 0.7, 0.8)),
                weight_at=at,
                created_at=at,
                updated_at=at,
                valid_at=at,
                status=Status.ARCHIVED if out else Status.ACTIVE,
                archived_at=at if out else None,
            )
            batch.memories.append(rec)
            batch.vectors[rec.memory_id] = vectors[j]
            mine.append(rec)
        # the profiles the writer would have written (docs/architecture.md#the-profile)
        live = [r for r in mine if r.status is Status.ACTIVE]
        for app_id in sorted(scopes(live), key=lambda a: a or ""):
            profile = next_profile(live, app_id, None, tenant=DEFAULT_TENANT, user_id=uid, now=now)
            if profile is not None:
                batch.memories.append(profile)
        if len(batch.memories) >= 10_000:
            env.runtime.memories.write(batch)
            batch = WriteBatch()
    env.runtime.memories.write(batch)
    env.stores.milvus.client.flush(env.stores.milvus.collection)  # index what was written
    return user_ids, len(facts)


def traffic(
    user_ids: list[int], n: int, rng: random.Random, zipf: float | None, session_len: int
) -> list[int]:
    """``n`` recall targets: sessions of ``session_len`` recalls of one user, the user
    drawn uniformly or, with ``zipf`` = s, with probability ∝ 1/rank^s (rank 1 most
    popular; which user holds which rank is shuffled)."""
    if session_len < 1:
        raise ValueError("session_len must be >= 1")
    ranked = list(user_ids)
    rng.shuffle(ranked)
    weights = None if zipf is None else [1.0 / (r**zipf) for r in range(1, len(ranked) + 1)]
    cum = None if weights is None else list(itertools.accumulate(weights))
    out: list[int] = []
    while len(out) < n:
        user = rng.choices(ranked, cum_weights=cum)[0] if cum else rng.choice(ranked)
        out.extend([user] * session_len)
    return out[:n]


def _cache_phase(cache: Any, hits: int, misses: int) -> dict[str, Any]:
    """What the hot cache did during one phase (counters read before it): the phase's
    cold loads are the newest ``misses`` of ``load_ms``."""
    got, missed = cache.hits - hits, cache.misses - misses
    cold = list(cache.load_ms)[-missed:] if missed else []
    return {
        "hot_cache": {
            "hit_ratio": round(got / max(1, got + missed), 3),
            "cold_loads": missed,
            "cold_load_ms": {k: round(v, 2) for k, v in percentiles(cold).items()} if cold else {},
            "cold_load_max_ms": round(max(cold, default=0.0), 2),
            "users_held": len(cache),
            "paged_held": getattr(cache, "paged_held", 0),
        },
    }


def _warm(cache: Any, user_ids: list[int]) -> None:
    if hasattr(cache, "warm"):
        # one ClickHouse query + one Milvus read for the group
        cache.warm([UserKey(DEFAULT_TENANT, u) for u in user_ids])
    else:
        for uid in user_ids:
            cache.get(uid, tenant=DEFAULT_TENANT)


def settle(idle_cores: float = 0.15, quiet_s: float = 2.0, max_s: float = 180.0) -> float:
    """Wait until this process is idle: returns the seconds waited.

    After a bulk load Milvus Lite keeps building its index in background threads of this
    process (about 10 s of 1.5 cores after 200k rows here); a phase measured during that
    time measures the index build. The bench reports steady state and says how long it
    waited for it.
    """
    started = time.monotonic()
    quiet = 0.0
    while quiet < quiet_s and time.monotonic() - started < max_s:
        cpu0, wall0 = time.process_time(), time.monotonic()
        time.sleep(0.5)
        busy = (time.process_time() - cpu0) / (time.monotonic() - wall0)
        quiet = quiet + 0.5 if busy < idle_cores else 0.0
    return time.monotonic() - started


def serve_api(env: BenchStack) -> tuple[Any, uvicorn.Server, threading.Thread, str]:
    """Serve the API with uvicorn in a thread of this process, as the node does.

    Returns ``(app, server, thread, recall_url)``; stop with ``server.should_exit = True``.
    """
    rt = env.runtime
    services = rt.services
    port = free_port()
    app = create_app(env.settings, env.stores, services)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="bench-api", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start within 30 s")
        time.sleep(0.05)
    return app, server, thread, f"http://127.0.0.1:{port}/memory/v1/recall"


def _phases(
    url: str,
    bodies: list[dict[str, Any]],
    contexts: list[dict[str, Any]] | None,
    sent: int,
    rates: list[float | None],
    clients: int,
    duration_s: float,
    key: str,
    batcher: Any,
    cache: Any,
    redis: Any,
) -> tuple[list[dict[str, Any]], int]:
    """One driven phase per rate, each going on along ``bodies`` where the last one
    stopped (from ``sent``), then, with ``contexts``, the context call at the same rate
    along them (``_context_phase``); returns the phases' results and the new ``sent``."""
    results = []
    for r in rates:
        redis_before = _redis_counters(redis)
        before = (batcher.calls, batcher.embedded, batcher.cache_hits)
        hits, misses = cache.hits, cache.misses
        snapshot_loads = getattr(cache, "snapshot_loads", 0)
        at = sent % len(bodies)
        with ProcSampler() as node:  # this process: the API server (the load is another)
            result = drive(url, bodies[at:] + bodies[:at], clients, r, duration_s, key)
        sent += result["requests"]
        result["offered_per_s"] = r  # None: saturation
        result["node"] = node.summary()
        result.update(_cache_phase(cache, hits, misses))
        result["hot_cache"]["from_snapshot"] = getattr(cache, "snapshot_loads", 0) - snapshot_loads
        result["timeouts"] = result["codes"].get("50401", 0)
        calls, embedded, cached = (
            now - then
            for now, then in zip(
                (batcher.calls, batcher.embedded, batcher.cache_hits), before, strict=True
            )
        )
        result["query_embeddings"] = {"model_calls": calls, "embedded": embedded}
        result["query_cache_hit_ratio"] = round(cached / max(1, cached + embedded), 3)
        result["redis"] = {
            k: round(now - then, 2)
            for (k, now), then in zip(
                _redis_counters(redis).items(), redis_before.values(), strict=True
            )
        }
        if contexts:
            result["context"], done = _context_phase(
                url, contexts, sent, r, clients, duration_s, key, cache, result["p99_ms"]
            )
            sent += done
        results.append(result)
    return results, sent


def _context_phase(
    url: str,
    bodies: list[dict[str, Any]],
    sent: int,
    rate: float | None,
    clients: int,
    duration_s: float,
    key: str,
    cache: Any,
    recall_p99_ms: float,
) -> tuple[dict[str, Any], int]:
    """The context call driven like the recall phase before it (same rate, clients and
    duration), going on along the traffic from ``sent``; returns its figures and how
    many it sent."""
    hits, misses = cache.hits, cache.misses
    at = sent % len(bodies)
    context_url = url.rsplit("/", 1)[0] + "/context"
    got = drive(context_url, bodies[at:] + bodies[:at], clients, rate, duration_s, key)
    figures = {
        "requests": got["requests"],
        "per_s": got["recalls_per_s"],
        **{k: got[k] for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms", "codes")},
        "timeouts": got["codes"].get("50401", 0),
        "hot_cache_hit_ratio": _cache_phase(cache, hits, misses)["hot_cache"]["hit_ratio"],
        "p99_over_recall": round(got["p99_ms"] / recall_p99_ms, 2) if recall_p99_ms else None,
    }
    return figures, got["requests"]


def _redis_counters(client: Any) -> dict[str, float]:
    """Redis's CPU seconds (its own; its forked children's: RDB saves and AOF rewrites)
    and its fork count, from INFO: a phase's share of these is what Redis persistence
    took from the cores the API runs on."""
    info = client.info("everything")
    return {
        "cpu_s": info["used_cpu_sys"] + info["used_cpu_user"],
        "children_cpu_s": info["used_cpu_sys_children"] + info["used_cpu_user_children"],
        "forks": info["total_forks"],
    }


def bench_recall(
    settings: Settings,
    users: int = 1000,
    memories: int = 200,
    clients: int = 20,
    rate: float | None = None,
    duration_s: float = 20.0,
    *,
    pool: int = 5000,
    phases: list[float | None] | None = None,
    seed_value: int = 7,
    auth: bool = False,
    fit_cache: bool = False,
    zipf: float | None = None,
    session_len: int = 1,
    compare_fit: bool = False,
    paged: int = 0,
    context: bool = True,
) -> dict[str, Any]:
    """Seed, serve, drive; one phase per entry of ``phases`` (default: just ``rate``).

    ``auth``: API keys on (an app key, checked on every call) and rate limits counted in
    Redis on every call, set high enough never to refuse: what keys and limits cost.
    ``compare_fit``: then resize the cache to hold every user, load them all, and run the
    phases again (``fit_phases``): the ``fit_cache`` best case on the same seeded stores
    and the same traffic, without seeding twice. ``context``: after each recall phase,
    the context call at the same rate (module docstring)."""
    rng = random.Random(seed_value)
    budget = settings.hot_cache_budget_mb
    if paged < 0:
        raise ValueError("paged must be >= 0")
    # ~1 KB a memory, 1.25 allowed (paged-out ones are held too)
    fitted = max(budget, users * (memories + paged) * 5 // 4096 + 64)
    if fit_cache:  # every seeded user fits: the best case, not production
        budget = fitted
    keyed: dict[str, Any] = {}
    if auth:
        keyed = {f"rate_limit_{w}_{k}": "1000000/second" for w in ("key", "user")
                 for k in ("recall", "write")}  # fmt: skip
    with bench_stack(settings, hot_cache_budget_mb=budget, **keyed) as env:
        key = ""
        if auth:
            path = env.data_dir / "api_keys.json"
            key, _ = keystore.create(path, "default", "app", [APP], global_grant=False,
                                     now=datetime.now(UTC))  # fmt: skip
            env.settings = env.settings.model_copy(update={"api_keys_file": path})
        started = time.monotonic()
        user_ids, distinct = seed(env, users, memories, pool, rng, paged)
        seeded = time.monotonic() - started
        started = time.monotonic()
        for i in range(0, len(user_ids), 50):  # what a node holds after its first recalls:
            _warm(env.runtime.cache, user_ids[i : i + 50])  # their snapshots, some cached,
            env.runtime.switches.get_many(  # and their switches in Redis (kept there)
                [UserKey(DEFAULT_TENANT, u) for u in user_ids[i : i + 50]]
            )
        warmed = time.monotonic() - started
        settled = settle()
        app, server, thread, url = serve_api(env)
        try:
            scope = {"include_global": True, "app_id": APP}
            warm = [  # statements, not questions: warms the model, not the query cache
                {"user_id": rng.choice(user_ids), "query": _fact(rng)[0], "scope": scope}
                for _ in range(200)
            ]
            drive(url, warm, min(clients, 4), 50.0, 3.0, key)
            asked = traffic(user_ids, 50_000, rng, zipf, session_len)
            bodies = [{"user_id": u, "query": _query(rng), "scope": scope} for u in asked]
            contexts = [
                {"user_id": b["user_id"], "scope": scope, "max_chars": 2000,
                 "messages": [{"role": "user", "content": b["query"]}]}
                for b in bodies
            ] if context else None  # fmt: skip
            recaller = api_state(app).recaller
            assert recaller is not None  # served with the runtime's services
            batcher = recaller.batcher
            cache = env.runtime.cache
            redis = env.stores.redis.client
            results, sent = _phases(url, bodies, contexts, 0, phases or [rate], clients,
                                    duration_s, key, batcher, cache, redis)  # fmt: skip
            fit_results: list[dict[str, Any]] = []
            warmed_fit = 0.0
            if compare_fit:
                cache.budget = fitted * 1024 * 1024
                started = time.monotonic()
                for i in range(0, len(user_ids), 50):
                    _warm(cache, user_ids[i : i + 50])
                warmed_fit = time.monotonic() - started
                settle()
                fit_results, _ = _phases(url, bodies, contexts, sent, phases or [rate],
                                         clients, duration_s, key, batcher, cache,
                                         redis)  # fmt: skip
        finally:
            server.should_exit = True
            thread.join(15)
    return {
        "bench": "recall",
        "users": users,
        "memories_per_user": memories,
        "paged_per_user": paged,
        "memories": users * memories,
        "distinct_facts_embedded": distinct,
        "seed_s": round(seeded, 1),
        "cache_warm_s": round(warmed, 1),
        "settle_s": round(settled, 1),
        "hot_cache_budget_mb": budget,
        "fit_cache": fit_cache,
        "traffic": {"zipf": zipf, "session_len": session_len},
        "embedder": env.runtime.embedder.name,
        "traces": env.traces,  # otel_endpoint set (docs/operations.md#traces)
        "auth": auth,
        "context": context,
        "phases": results,
        **(
            {"fit_budget_mb": fitted, "fit_warm_s": round(warmed_fit, 1), "fit_phases": fit_results}
            if compare_fit
            else {}
        ),
    }
