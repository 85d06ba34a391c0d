"""What ``bench soak`` reads of the node process: its ``/proc`` figures (RSS, open
files by kind, threads, CPU) and its own account (``GET /admin/v1/stats``) broken down
into the heaps and the entries that could make up a growth."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psutil

from ops.bench.sampler import cpu_seconds


def proc_stats(pid: int) -> dict[str, float]:
    proc = psutil.Process(pid)
    # /proc/<pid>/status for the anonymous/file split of RSS: psutil has rss and shared,
    # not RssAnon/RssFile
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    mb = {k: round(int(status[k].split()[0]) / 1024, 1) for k in ("VmRSS", "RssAnon", "RssFile")}
    return {
        "rss_mb": mb["VmRSS"],
        "rss_anon_mb": mb["RssAnon"],  # heaps (Python, malloc, chDB's jemalloc, ONNX)
        "rss_file_mb": mb["RssFile"],  # mapped files: libraries, mmapped parts
        "open_files": proc.num_fds(),
        "threads": proc.num_threads(),
        "cpu_s": round(cpu_seconds(pid), 2),
    }


def fd_kinds(pid: int, data_dir: Path) -> dict[str, int]:
    """The node's open descriptors by kind: sockets, pipes, anon inodes, and files by
    their first directory under the data dir (clickhouse, milvus, recovery, ...).
    Reads /proc/<pid>/fd itself: psutil's ``open_files`` lists regular files only, and
    the kinds need every descriptor's target (sockets, pipes, thread stat files)."""
    kinds: Counter = Counter()
    before = set(os.listdir(f"/proc/{pid}/task"))
    targets = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            targets.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue  # closed meanwhile
    live = before | set(os.listdir(f"/proc/{pid}/task"))  # threads born meanwhile count
    for target in targets:
        if target.startswith(f"/proc/{pid}/task/"):
            # chDB keeps stat/schedstat/io open per thread that ran a query: a leak
            # would be handles of threads that have exited
            tid = target.split("/")[4]
            if tid in live:  # by the thread's name: chDB's ThreadPool, python, ...
                kinds[f"thread stats (live: {_comm(pid, tid)})"] += 1
            else:
                kinds["thread stats (exited)"] += 1
        elif target.startswith(("socket:", "pipe:")):
            kinds[target.split(":", 1)[0]] += 1
        elif target.startswith("anon_inode:"):
            kinds[target] += 1
        elif target.startswith(str(data_dir)):
            rel = Path(target).relative_to(data_dir).parts
            kinds[f"data/{rel[0] if rel else ''}"] += 1
        else:  # by directory, two levels ("/usr/lib", "/tmp/xyz"); "(deleted)" kept
            parts = Path(target.removesuffix(" (deleted)")).parts[:3]
            suffix = " (deleted)" if target.endswith(" (deleted)") else ""
            kinds[str(Path(*parts)) + suffix] += 1
    return dict(kinds.most_common())


def node_stats(base: str, admin: str) -> dict[str, Any]:
    """The node's own account (``GET /admin/v1/stats``): Python heap, malloc, hot cache,
    chDB's memory and threads; {} with the error if it does not answer."""
    try:
        resp = httpx.get(
            f"{base}/admin/v1/stats", headers={"Authorization": f"Bearer {admin}"}, timeout=30
        )
        return resp.json()["data"]
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


_MB = 1024 * 1024


def heaps(stats: dict[str, Any]) -> dict[str, float]:
    """MB held by each allocator in one ``/admin/v1/stats`` answer, so that RSS growth
    can be put down to one of them (absent figures are left out)."""
    py = stats.get("python", {})
    glibc, ob, arrow = py.get("malloc", {}), py.get("obmalloc", {}), py.get("arrow", {})
    milvus = stats.get("milvus", {})
    figures = {
        "pymalloc_arenas": ob.get("arenas", 0) * _MB or None,
        "pymalloc_in_use": ob.get("in_use_bytes"),
        "glibc_in_use": glibc.get("in_use_bytes"),
        "glibc_free": glibc.get("free_bytes"),
        "glibc_mmapped": glibc.get("mmap_bytes"),
        "jemalloc_resident": stats.get("clickhouse", {}).get("jemalloc_resident"),
        "arrow": arrow.get("allocated_bytes"),
        # of which Milvus Lite's segments and memtable (Arrow) and its vector copies (numpy)
        "milvus_arrow": _sum(milvus, "segment_arrow_bytes", "memtable_bytes"),
        "milvus_vectors": milvus.get("segment_vector_bytes"),
        "hot_cache": stats.get("hot_cache", {}).get("bytes"),
    }
    return {k: round(v / _MB, 1) for k, v in figures.items() if v is not None}


def account(t_s: float, proc: dict[str, float], stats: dict[str, Any]) -> dict[str, Any]:
    return {"t_s": t_s, "rss_mb": proc["rss_mb"], "heaps_mb": heaps(stats), "counts": counts(stats)}


def _sum(d: dict[str, Any], *keys: str) -> int | None:
    return sum(d[k] for k in keys) if all(k in d for k in keys) else None


def counts(stats: dict[str, Any]) -> dict[str, int]:
    """What the growth could be made of, in entries: Milvus Lite's live rows, the rows
    its segments hold (dead ones until a compaction) and its tombstones, and how full
    each memo table is (``lru_<name>``: a table that stops at its max is bounded)."""
    milvus = stats.get("milvus", {})
    found = {
        f"milvus_{k}": milvus[k]
        for k in ("rows", "segment_rows", "memtable_rows", "tombstones", "segments")
        if k in milvus
    }
    for name, fill in stats.get("lru_caches", {}).items():
        found[f"lru_{name}"] = fill["entries"]
    return found


def _comm(pid: int, tid: str) -> str:
    try:
        return Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip() or "?"
    except OSError:
        return "exited"
