"""`memstream bench soak`: a mixed load against a real node process, watched for leaks.

A throw-away stack (Kafka, Redis on free ports, a temporary data dir) and a real node
subprocess (``ops.stack.start_node``, as ``memstream up`` runs it) with API keys on: an
admin key and one app key per client. CLIENTS threads then loop for DURATION seconds
over a pool of users, each request drawn from a fixed mix — add_structured, add,
recall, update, delete, batch_delete and, rarely, purge (admin key) — and every answer's
envelope code is counted per operation.

The node is sampled from ``/proc/<pid>`` every few seconds (``ops.bench.soak_node``):
resident memory (VmRSS), open file descriptors and threads; and asked for its own account (``GET
/admin/v1/stats``: Python heap, malloc, hot cache, chDB's memory and threads, Milvus
Lite's live and dead rows, the memo tables' fill) once a minute (``node.accounts``), so
growth can be put down to one of them. The report gives recall p50/p95/p99, the codes, and
the node's numbers after warm-up and at the end, plus their drift: a leak shows as RSS
or open files that keep growing with the load (``rss_slope_mb_per_min_second_half``, a
least-squares slope; the samples' first half is warm-up: pools, caches, code pages).
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx

from core.settings import Settings
from ops import stack
from ops.bench.env import percentiles, rate_series
from ops.bench.soak_node import account, counts, fd_kinds, heaps, node_stats, proc_stats
from ops.procs import free_port, wait_until
from sinks import keystore

MIX = (
    ("recall", 50),
    ("add_structured", 18),
    ("add", 8),
    ("update", 10),
    ("delete", 7),
    ("batch_delete", 5),
    ("purge", 2),
)
APP = "soak"
SAMPLE_S = 5.0
# The lifecycle runs every minute and purges a deleted memory at once, as it would after
# ``deleted_retention_days``: deleted memories keep their vectors until then (restore),
# and embedded Milvus Lite holds every row in memory (~3.5 KB each), so with the default
# 30 days the node's data grows by every delete of the run and RSS with it (+45 MB of
# Milvus Lite rows in an hour), which says nothing about leaks. With these the data
# levels off: what grows then is not data.
STEADY_ENV = {"MEMSTREAM_LIFECYCLE_INTERVAL_S": "60", "MEMSTREAM_DELETED_RETENTION_DAYS": "0"}
WARMUP_S = 300.0  # a fresh node fills its pools and caches over ~5 minutes of this load
ACCOUNT_S = 60.0  # the node's own account (GET /admin/v1/stats), once a minute
WORDS = (
    "tea coffee Lisbon Osaka cello tennis bakery hiking Dune Prius garden kittens "
    "jazz marathon pottery sushi river library sunrise chess"
).split()


def _sentence(rng: random.Random) -> str:
    return f"I like {rng.choice(WORDS)} and {rng.choice(WORDS)} ({rng.randrange(10**6)})"


class _Client(threading.Thread):
    def __init__(self, i: int, base: str, key: str, admin: str, users: list[int], until: float):
        super().__init__(name=f"soak-{i}", daemon=True)
        self.rng = random.Random(i)
        self.http = httpx.Client(base_url=base, timeout=30)
        self.key, self.admin, self.users, self.until = key, admin, users, until
        self.codes: dict[str, Counter] = defaultdict(Counter)
        self.recall_ms: list[float] = []
        self.done_at: list[float] = []  # monotonic time of every answer: throughput over time
        self.ids: dict[int, list[str]] = defaultdict(list)
        ops, weights = zip(*MIX, strict=True)
        self.ops, self.weights = ops, weights

    def _post(self, path: str, body: dict, admin: bool = False) -> dict:
        key = self.admin if admin else self.key
        try:
            resp = self.http.post(path, json=body, headers={"Authorization": f"Bearer {key}"})
            return resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            return {"code": f"transport:{type(exc).__name__}"}

    def run(self) -> None:
        while time.monotonic() < self.until:
            op = self.rng.choices(self.ops, self.weights)[0]
            user = self.rng.choice(self.users)
            mine = self.ids[user]
            if op in ("update", "delete", "batch_delete") and not mine:
                op = "add_structured"
            body: dict[str, Any] = {"user_id": user}
            path = f"/memory/v1/{op}"
            if op == "recall":
                body |= {"query": self.rng.choice(WORDS), "scope": {"app_id": APP}}
            elif op == "add_structured":
                body |= {"app_id": APP, "content": _sentence(self.rng)}
            elif op == "add":
                body |= {
                    "app_id": APP,
                    "messages": [{"role": "user", "content": _sentence(self.rng)}],
                }
            elif op == "update":
                body |= {"memory_id": self.rng.choice(mine), "content": _sentence(self.rng)}
            elif op == "delete":
                body |= {"memory_id": mine.pop(self.rng.randrange(len(mine)))}
            elif op == "batch_delete":
                body |= {"memory_ids": [mine.pop() for _ in range(min(3, len(mine)))]}
            started = time.perf_counter()
            answer = self._post(path, body, admin=op == "purge")
            if op == "recall" and answer.get("code") == 0:
                self.recall_ms.append((time.perf_counter() - started) * 1000)
            self.codes[op][str(answer.get("code"))] += 1
            self.done_at.append(time.monotonic())
            if op == "add_structured" and answer.get("code") == 0:
                mine.append(answer["data"]["memory_id"])
            elif op == "purge" and answer.get("code") == 0:
                mine.clear()
        self.http.close()


def bench_soak(
    settings: Settings,
    duration_s: float = 300.0,
    clients: int = 4,
    users: int = 50,
    warmup_s: float = WARMUP_S,
) -> dict[str, Any]:
    """``warmup_s``: the same load runs that long first, and the node's start figures are
    read after it (its pools, caches and code pages filled: RSS climbs ~130 MB over the
    first ~5 minutes, then levels off); ``node.load_start`` keeps the figures from before
    it. Codes and latencies count the whole run."""
    data_dir = Path(tempfile.mkdtemp(prefix="memstream-soak-"))
    bootstrap = f"127.0.0.1:{free_port()}"
    redis_url = f"redis://127.0.0.1:{free_port()}/0"
    port = free_port()
    try:
        stack.start_redis(data_dir, redis_url)
        stack.start_kafka(  # the controller on a port of its own: port + 1 may be taken
            data_dir, bootstrap, partitions=settings.kafka_partitions, controller_port=free_port()
        )
        key_path = data_dir / "api_keys.json"
        now = _now()
        admin, _ = keystore.create(key_path, "default", "admin", [], global_grant=False, now=now)
        app_keys = [
            keystore.create(key_path, "default", "app", [APP], global_grant=False, now=now)[0]
            for _ in range(clients)
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
        env |= {
            "MEMSTREAM_API_PORT": str(port),
            "MEMSTREAM_KAFKA_BOOTSTRAP": bootstrap,
            "MEMSTREAM_REDIS_URL": redis_url,
            "MEMSTREAM_API_KEYS_FILE": str(key_path),
            "MEMSTREAM_LOG_LEVEL": "WARNING",
            **STEADY_ENV,
        }
        pid = stack.start_node(data_dir, env)
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _ready(base), 300, "node /readyz", stack.proc(data_dir, "node"))
        pool = [9_000_000 + i for i in range(users)]
        _warm(base, app_keys[0], pool)
        load_start = proc_stats(pid)  # before the warm-up: its growth stays in the record
        load_began = time.monotonic()
        until = load_began + warmup_s + duration_s
        threads = [_Client(i, base, app_keys[i], admin, pool, until) for i in range(clients)]
        for t in threads:
            t.start()
        while time.monotonic() < until - duration_s and any(t.is_alive() for t in threads):
            time.sleep(min(SAMPLE_S, max(0.0, until - duration_s - time.monotonic())))
        start_stats = proc_stats(pid)
        start_fds = fd_kinds(pid, data_dir)
        inside = {"start": node_stats(base, admin)}
        samples = [{"t_s": 0.0, **start_stats}]
        accounts = [account(0.0, start_stats, inside["start"])]
        began = time.monotonic()
        while any(t.is_alive() for t in threads):
            time.sleep(SAMPLE_S)
            samples.append({"t_s": round(time.monotonic() - began, 1), **proc_stats(pid)})
            if samples[-1]["t_s"] - accounts[-1]["t_s"] >= ACCOUNT_S:
                stats = node_stats(base, admin)
                accounts.append(account(samples[-1]["t_s"], samples[-1], stats))
                if "half" not in inside and samples[-1]["t_s"] >= duration_s / 2:
                    inside["half"] = stats
        end_stats = proc_stats(pid)
        inside["end"] = node_stats(base, admin)
        inside.setdefault("half", inside["end"])  # a run shorter than ACCOUNT_S
        accounts.append(account(round(time.monotonic() - began, 1), end_stats, inside["end"]))
        fds = {"start": start_fds, "end": fd_kinds(pid, data_dir)}
    finally:
        stack.stop(data_dir)
        node_errors = _error_lines(stack.proc(data_dir, "node").logfile)
        shutil.rmtree(data_dir, ignore_errors=True)
    codes: dict[str, Counter] = defaultdict(Counter)
    recall_ms: list[float] = []
    for t in threads:
        recall_ms.extend(t.recall_ms)
        for op, counter in t.codes.items():
            codes[op].update(counter)
    minutes = max(1e-9, (samples[-1]["t_s"] - samples[0]["t_s"]) / 60)
    # growth from the second half's first sample, after caches and pools filled
    half = samples[len(samples) // 2]
    half_minutes = max(1e-9, (samples[-1]["t_s"] - half["t_s"]) / 60)
    requests = sum(sum(c.values()) for c in codes.values())
    _cores(samples)
    measured_s = max(1e-9, samples[-1]["t_s"] - samples[0]["t_s"])
    return {
        "bench": "soak",
        "config": {
            "duration_s": duration_s,
            "warmup_s": warmup_s,
            "clients": clients,
            "users": users,
            "mix": dict(MIX),
            "node_env": STEADY_ENV,
        },  # fmt: skip
        "requests": requests,
        "requests_per_s": round(requests / max(1e-9, warmup_s + minutes * 60), 1),
        "recall_ms": {
            **{k: round(v, 2) for k, v in percentiles(recall_ms).items()},
            "max": round(max(recall_ms, default=0.0), 2),
        },
        "recalls_ok": len(recall_ms),
        "codes": {op: dict(sorted(c.items())) for op, c in sorted(codes.items())},
        "node_errors": node_errors,
        "node": {
            "load_start": load_start,
            "start": start_stats,
            "end": end_stats,
            "rss_growth_mb_per_min_second_half": round(
                (samples[-1]["rss_mb"] - half["rss_mb"]) / half_minutes, 2
            ),
            # least squares over the second half's samples: the endpoints alone swing by
            # tens of MB with one transient allocation (Milvus Lite's Arrow flushes)
            "rss_slope_mb_per_min_second_half": _slope(samples[len(samples) // 2 :], "rss_mb"),
            "open_files_slope_per_min_second_half": _slope(
                samples[len(samples) // 2 :], "open_files"
            ),
            "open_files_delta": end_stats["open_files"] - start_stats["open_files"],
            "threads_delta": end_stats["threads"] - start_stats["threads"],
            "cpu_cores_mean": round((end_stats["cpu_s"] - start_stats["cpu_s"]) / measured_s, 3),
            "rss_mb_max": max(p["rss_mb"] for p in samples),
            "open_files_by_kind": fds,
            "inside": inside,  # the node's own account at start, half-way and end
            "heaps_mb": {when: heaps(stats) for when, stats in inside.items()},
            "counts": {when: counts(stats) for when, stats in inside.items()},
            # every ACCOUNT_S: RSS beside each heap and count, to see which one moves with it
            "accounts": accounts,
            "samples": samples,
        },
        "series": {  # from the load's start, warm-up included; node samples: node.samples
            "requests_per_s": rate_series(
                [at for t in threads for at in t.done_at], load_began, SAMPLE_S
            ),
        },
    }


def _cores(samples: list[dict[str, float]]) -> None:
    """Each sample's ``cpu_cores``: the node's CPU seconds per second since the last."""
    for i, p in enumerate(samples):
        if i == 0:
            p["cpu_cores"] = 0.0
        else:
            last = samples[i - 1]
            p["cpu_cores"] = round(
                (p["cpu_s"] - last["cpu_s"]) / max(1e-9, p["t_s"] - last["t_s"]), 3
            )


def _slope(samples: list[dict[str, float]], key: str) -> float:
    """Least-squares growth of ``key`` per minute over ``samples``."""
    xs = [p["t_s"] / 60 for p in samples]
    ys = [p[key] for p in samples]
    if len(xs) < 2:
        return 0.0
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var, 2)


def _error_lines(logfile: Path, limit: int = 200) -> list[str]:
    """The node log's ERROR records and tracebacks (the data dir is deleted after the
    run, so a 5xx seen by a client keeps its cause here)."""
    if not logfile.exists():
        return []
    kept: list[str] = []
    in_trace = False
    for line in logfile.read_text(errors="replace").splitlines():
        if line.startswith("Traceback"):
            in_trace = True
        elif in_trace and not line.startswith(" "):
            kept.append(line)  # the exception line closes a plain traceback
            in_trace = False
            continue
        if in_trace or '"level": "ERROR"' in line:
            kept.append(line)
    return kept[-limit:]


def _now():
    from datetime import UTC, datetime

    return datetime.now(UTC)


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _warm(base: str, key: str, users: list[int]) -> None:
    """One memory and one recall per user, so the start numbers are of a warm node."""
    with httpx.Client(base_url=base, timeout=60) as http:
        headers = {"Authorization": f"Bearer {key}"}
        for u in users:
            http.post("/memory/v1/add_structured", headers=headers,
                      json={"user_id": u, "app_id": APP, "content": f"warm-up {u}"})  # fmt: skip
            http.post("/memory/v1/recall", headers=headers,
                      json={"user_id": u, "query": "warm", "scope": {"app_id": APP}})  # fmt: skip


_NODE_FIGURES = (("RSS (MB)", "rss_mb"), ("open files", "open_files"), ("threads", "threads"))


def _span(node: dict[str, Any], key: str) -> str:
    """``before warm-up -> start -> end`` (reports from before ``load_start``: two)."""
    points = [node[w][key] for w in ("load_start", "start", "end") if w in node]
    return " -> ".join(str(v) for v in points)


def summary(result: dict[str, Any]) -> str:
    """The run in one line (stderr); the JSON is the record."""
    node, c = result["node"], result["config"]
    return (
        f"bench soak: {result['requests']} requests in {c['warmup_s'] + c['duration_s']:g}s "
        f"({result['requests_per_s']}/s, {c['clients']} clients); recall p50 "
        f"{result['recall_ms']['p50']} p99 {result['recall_ms']['p99']} ms; node (before "
        "warm-up -> start -> end) "
        + ", ".join(f"{what} {_span(node, key)}" for what, key in _NODE_FIGURES)
        + "; second half "
        f"{node['rss_slope_mb_per_min_second_half']} MB/min, "
        f"{node['open_files_slope_per_min_second_half']} open files/min; heaps (MB) "
        + ", ".join(
            f"{k} {v} -> {node['heaps_mb'].get('end', {}).get(k, '?')}"
            for k, v in node["heaps_mb"].get("start", {}).items()
        )
        + "; counts "
        + ", ".join(
            f"{k} {v} -> {node.get('counts', {}).get('end', {}).get(k, '?')}"
            for k, v in node.get("counts", {}).get("start", {}).items()
        )
    )
