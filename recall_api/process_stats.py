"""What a process holds, for a soak to tell where its resident memory goes.

The Python heap (pymalloc's arenas and blocks, gc generations and tracked objects), glibc malloc's
totals (``mallinfo2``: bytes in use vs free in its arenas: fragmentation shows as free
bytes that RSS keeps), pyarrow's pool and the hot cache's footprint. Each figure is cheap except
``gc_objects`` (one pass over the tracked objects, ~0.1 s per million), which is why
this is an admin call and not a Prometheus gauge scraped every few seconds.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import tempfile
from pathlib import Path
from typing import TypedDict

from core import calibration, compression, index_views, lexical, sameness
from sinks.services import Services
from sinks.stores import Stores


class PythonHeap(TypedDict):
    allocated_blocks: int
    obmalloc: dict[str, int]
    gc_counts: list[int]
    gc_collections: list[int]
    gc_objects: int
    gc_threshold: list[int]
    malloc: dict[str, int]
    arrow: dict[str, str | int]


class Stats(TypedDict, total=False):
    """``memstream.schemas.responses.ProcessStats``'s fields (``hot_cache``: API processes only)."""

    python: PythonHeap
    lru_caches: dict[str, dict[str, int | None]]
    hot_cache: dict[str, int]
    clickhouse: dict[str, int]
    milvus: dict[str, int]


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


def arrow_pool() -> dict[str, str | int]:
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


_OBMALLOC_LINES = {  # _PyObject_DebugMallocStats line -> our key
    "# arenas allocated current": "arenas",
    "# arenas highwater mark": "arenas_highwater",
    "# bytes in allocated blocks": "in_use_bytes",
    "# bytes in available blocks": "free_bytes",
}


def obmalloc() -> dict[str, int]:
    """pymalloc's own account: its arenas (1 MiB each on 64-bit, mapped one by one and
    given back only when empty) and the bytes in used vs free blocks inside them, a
    fourth heap beside glibc, jemalloc and mimalloc. CPython has no API for these but
    ``_PyObject_DebugMallocStats(FILE *)``, which writes text: it is written to a
    temporary file through libc and parsed. {} where that is not available (another
    interpreter, a build without pymalloc)."""
    try:
        libc = ctypes.CDLL(None)
        dump = ctypes.pythonapi._PyObject_DebugMallocStats
    except (AttributeError, OSError):
        return {}
    libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p] * 2
    libc.fclose.argtypes = [ctypes.c_void_p]
    dump.argtypes = [ctypes.c_void_p]
    with tempfile.NamedTemporaryFile(prefix="memstream-obmalloc-") as tmp:
        out = libc.fopen(tmp.name.encode(), b"w")
        if not out:
            return {}
        try:
            if not dump(out):  # 0: pymalloc is not in use (PYTHONMALLOC=malloc)
                return {}
        finally:
            libc.fclose(out)
        text = Path(tmp.name).read_text(errors="replace")
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition("=")
        if (key := _OBMALLOC_LINES.get(name.strip())) is not None:
            found[key] = int(value.strip().replace(",", ""))
    return found


def python_heap() -> PythonHeap:
    return {
        "allocated_blocks": sys.getallocatedblocks(),
        "obmalloc": obmalloc(),
        "gc_counts": list(gc.get_count()),
        "gc_collections": [s["collections"] for s in gc.get_stats()],
        "gc_objects": len(gc.get_objects()),
        "gc_threshold": list(gc.get_threshold()),
        "malloc": malloc_totals(),
        "arrow": arrow_pool(),
    }


def lru_caches() -> dict[str, dict[str, int | None]]:
    """How full each of our bounded ``lru_cache`` memo tables is. They hold a few MB
    each when full and fill with the distinct texts a process meets, so over a soak's
    first minutes they grow like a leak would; ``entries`` at ``max`` means it stopped."""
    caches = {
        "latin_share": calibration._latin_share,
        "compression_shape": compression.shape,
        "stem": lexical._stem,
        "term_counts": lexical.term_counts,
        "shared_decode": index_views.shared_decode,
        "specifics": sameness.specifics,
        "posseg": sameness._posseg,
    }
    return {
        name: {"entries": (info := fn.cache_info()).currsize, "max": info.maxsize}
        for name, fn in caches.items()
    }


def process_stats(stores: Stores, services: Services | None) -> Stats:
    """The node's Python heap and memo tables, its hot cache, its ClickHouse engine and
    embedded Milvus Lite's segments."""
    stats: Stats = {"python": python_heap(), "lru_caches": lru_caches()}
    if services is not None:
        stats["hot_cache"] = {"users": len(services.cache), "bytes": services.cache.nbytes}
    stats["clickhouse"] = stores.clickhouse.engine_stats()
    stats["milvus"] = stores.milvus.engine_stats()
    return stats
