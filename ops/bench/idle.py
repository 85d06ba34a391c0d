"""`memstream bench idle`: what a node with no traffic costs in CPU, and which threads.

A throw-away stack (Kafka, Redis on free ports, a temporary data dir) and a real node
subprocess (``ops.stack.start_node``, as ``memstream up`` runs it). Once it is ready and
has settled (``settle_s``), nothing is sent to it; each of ``rounds`` windows of
``duration_s`` reads the CPU time of the node process (user + system, every thread),
of each of its threads (``/proc/<pid>/task``) and of the Kafka broker and Redis.

The figure is CPU-seconds per minute of the node process: on a shared machine (tests
and other benches beside it) a share of the machine's wall time moves with their load,
CPU time spent by the node does not. 60 CPU-s/min is one core. Threads are grouped by
their kernel name (``comm``) with trailing digits dropped (``rdk:broker12`` ->
``rdk:broker``); Python threads all share the process's name (``python``), so the
busiest are also listed one by one with their ids, to be named with ``py-spy dump``.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from core.settings import Settings
from ops import stack
from ops.bench.sampler import cpu_seconds
from ops.procs import free_port, wait_until

SETTLE_S = 20.0  # after /readyz: topic creation, the flows' start, the first lifecycle pass
TOP = 8  # threads listed one by one


@dataclass(frozen=True)
class ThreadTime:
    tid: int
    name: str
    cpu_s: float


def thread_group(name: str) -> str:
    """A thread's group: its kernel name less a trailing number (``rdk:broker-1``,
    ``ThreadPool12`` -> ``rdk:broker``, ``ThreadPool``)."""
    return re.sub(r"[-_:#]?\d+$", "", name) or name


def per_minute(cpu_s: float, wall_s: float) -> float:
    """CPU-seconds per minute of wall time (60 = one core busy)."""
    return round(cpu_s * 60 / wall_s, 3) if wall_s > 0 else 0.0


def thread_deltas(before: list[ThreadTime], after: list[ThreadTime]) -> list[ThreadTime]:
    """Each thread alive at the end with the CPU it used in between (a thread born in
    between counts from 0; one that ended is gone from both figures: the process total
    keeps it)."""
    start = {t.tid: t.cpu_s for t in before}
    return [ThreadTime(t.tid, t.name, max(0.0, t.cpu_s - start.get(t.tid, 0.0))) for t in after]


def by_group(deltas: list[ThreadTime], wall_s: float) -> list[dict[str, Any]]:
    """CPU-s per minute and thread count per group, the busiest first."""
    cpu: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for t in deltas:
        g = thread_group(t.name)
        cpu[g] += t.cpu_s
        count[g] += 1
    rows = [
        {"group": g, "threads": count[g], "cpu_s_per_min": per_minute(cpu[g], wall_s)} for g in cpu
    ]
    return sorted(rows, key=lambda r: (-r["cpu_s_per_min"], r["group"]))


def top_threads(deltas: list[ThreadTime], wall_s: float, n: int = TOP) -> list[dict[str, Any]]:
    ranked = sorted(deltas, key=lambda t: (-t.cpu_s, t.tid))[:n]
    return [
        {"tid": t.tid, "name": t.name, "cpu_s_per_min": per_minute(t.cpu_s, wall_s)} for t in ranked
    ]


def threads(pid: int) -> list[ThreadTime]:
    """Every thread of ``pid`` with its user + system CPU seconds so far."""
    out = []
    for t in psutil.Process(pid).threads():
        try:
            name = Path(f"/proc/{pid}/task/{t.id}/comm").read_text().strip()
        except OSError:
            continue  # ended meanwhile
        out.append(ThreadTime(t.id, name, t.user_time + t.system_time))
    return out


def measure(pids: dict[str, int], duration_s: float) -> dict[str, Any]:
    """One idle window: the node's CPU overall, by thread group and its busiest threads,
    and the broker's and Redis's (CPU-s per minute each)."""
    procs = {name: cpu_seconds(pid) for name, pid in pids.items()}
    before = threads(pids["node"])
    began = time.monotonic()
    time.sleep(duration_s)
    wall = time.monotonic() - began
    after = threads(pids["node"])
    spent = {name: cpu_seconds(pid) - procs[name] for name, pid in pids.items()}
    deltas = thread_deltas(before, after)
    return {
        "seconds": round(wall, 2),
        "node_cpu_s_per_min": per_minute(spent["node"], wall),
        "node_core_pct": round(spent["node"] / wall * 100, 2),
        "node_threads": len(after),
        "groups": by_group(deltas, wall),
        "top_threads": top_threads(deltas, wall),
        "others_cpu_s_per_min": {
            name: per_minute(s, wall) for name, s in spent.items() if name != "node"
        },
    }


def bench_idle(
    settings: Settings, duration_s: float = 60.0, rounds: int = 2, settle_s: float = SETTLE_S
) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="memstream-idle-"))
    bootstrap = f"127.0.0.1:{free_port()}"
    redis_url = f"redis://127.0.0.1:{free_port()}/0"
    port = free_port()
    try:
        stack.start_redis(data_dir, redis_url)
        stack.start_kafka(  # the controller on a port of its own: port + 1 may be taken
            data_dir, bootstrap, partitions=settings.kafka_partitions, controller_port=free_port()
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
        env |= {
            "MEMSTREAM_API_PORT": str(port),
            "MEMSTREAM_KAFKA_BOOTSTRAP": bootstrap,
            "MEMSTREAM_KAFKA_PARTITIONS": str(settings.kafka_partitions),
            "MEMSTREAM_REDIS_URL": redis_url,
            "MEMSTREAM_LOG_LEVEL": "WARNING",
        }
        stack.start_node(data_dir, env)
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _ready(base), 300, "node /readyz", stack.proc(data_dir, "node"))
        time.sleep(settle_s)
        pids = {name: pid for name, pid in stack.running(data_dir).items() if pid is not None}
        windows = [measure(pids, duration_s) for _ in range(rounds)]
    finally:
        stack.stop(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)
    figures = sorted(w["node_cpu_s_per_min"] for w in windows)
    return {
        "bench": "idle",
        "config": {
            "duration_s": duration_s,
            "rounds": rounds,
            "settle_s": settle_s,
            "kafka_partitions": settings.kafka_partitions,
        },
        "node_cpu_s_per_min": figures[len(figures) // 2],  # the median window
        "node_cpu_s_per_min_max": figures[-1],
        "windows": windows,
    }


def summary(result: dict[str, Any]) -> str:
    """The run in a few lines (stderr); the JSON is the record."""
    lines = [
        f"bench idle: node {result['node_cpu_s_per_min']} CPU-s/min (median of "
        f"{len(result['windows'])} windows of {result['config']['duration_s']:g}s; "
        f"60 = one core)"
    ]
    for i, w in enumerate(result["windows"], 1):
        groups = ", ".join(
            f"{g['group']} x{g['threads']} {g['cpu_s_per_min']}" for g in w["groups"][:5]
        )
        others = ", ".join(f"{k} {v}" for k, v in w["others_cpu_s_per_min"].items())
        lines.append(
            f"  window {i}: node {w['node_cpu_s_per_min']} ({w['node_core_pct']} % of a core, "
            f"{w['node_threads']} threads); by group: {groups}; {others}"
        )
    return "\n".join(lines)


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
