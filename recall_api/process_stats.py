"""What a process holds, for a soak to tell where its resident memory goes.

The Python heap (pymalloc blocks, gc generations and tracked objects), glibc malloc's
totals (``mallinfo2``: bytes in use vs free in its arenas: fragmentation shows as free
bytes that RSS keeps), pyarrow's pool and the hot cache's footprint. Each figure is cheap except
``gc_objects`` (one pass over the tracked objects, ~0.1 s per million), which is why
this is an admin call and not a Prometheus gauge scraped every few seconds.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from typing import Any


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


def malloc_totals() -> dict[str, int]:
    """glibc's totals over all arenas; {} where there is no ``mallinfo2`` (glibc < 2.33, musl)."""
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return {}
    fn.restype = _MallInfo2
    info = fn()
    return {
        "arena_bytes": info.arena,  # sbrk/arena heap, in use or free
        "mmap_bytes": info.hblkhd,  # large blocks mapped one by one
        "in_use_bytes": info.uordblks,
        "free_bytes": info.fordblks,  # held by the arenas, not given back
    }


def arrow_pool() -> dict[str, Any]:
    """pyarrow's default pool (Milvus Lite's columns: it runs in this process), a third
    allocator (mimalloc) apart from malloc and chDB's jemalloc; {} if pyarrow is not loaded."""
    pa = sys.modules.get("pyarrow")
    if pa is None:
        return {}
    pool = pa.default_memory_pool()
    return {
        "backend": pool.backend_name,
        "allocated_bytes": pool.bytes_allocated(),
        "peak_bytes": pool.max_memory(),
    }


def python_heap() -> dict[str, Any]:
    return {
        "allocated_blocks": sys.getallocatedblocks(),
        "gc_counts": list(gc.get_count()),
        "gc_collections": [s["collections"] for s in gc.get_stats()],
        "gc_objects": len(gc.get_objects()),
        "gc_threshold": list(gc.get_threshold()),
        "malloc": malloc_totals(),
        "arrow": arrow_pool(),
    }


def process_stats(stores: Any, services: Any) -> dict[str, Any]:
    """The node's Python heap, its hot cache and its ClickHouse engine."""
    stats: dict[str, Any] = {"python": python_heap()}
    if services is not None:
        stats["hot_cache"] = {"users": len(services.cache), "bytes": services.cache.nbytes}
    stats["clickhouse"] = stores.clickhouse.engine_stats()
    return stats
