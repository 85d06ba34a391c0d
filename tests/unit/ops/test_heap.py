"""ops.heap: malloc_trim returns the free pages inside glibc's arenas to the OS."""

from __future__ import annotations

import ctypes
import os
import threading

import pytest

from ops import heap


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _has_trim() -> bool:
    try:
        ctypes.CDLL(None).malloc_trim  # noqa: B018
        return True
    except (AttributeError, OSError):
        return False


@pytest.mark.skipif(not _has_trim(), reason="no glibc malloc_trim on this platform")
def test_trim_returns_the_holes_a_fragmented_arena_keeps() -> None:
    # 64 KiB blocks stay inside the arena (below the mmap threshold); freeing every
    # other one leaves holes that free() alone never gives back
    blocks = [bytearray(64 * 1024) for _ in range(3000)]  # ~190 MB, touched
    del blocks[::2]
    held = _rss_mb()
    assert heap.trim() is True
    assert _rss_mb() < held - 50  # ~95 MB of holes went back
    del blocks


def test_the_trimmer_starts_once_per_process_and_stops() -> None:
    stop = threading.Event()
    first = heap.start_trimmer(0.01, stop=stop)
    assert first is _has_trim()
    assert heap.start_trimmer(0.01, stop=stop) is False  # one per process
    if first:
        assert any(t.name == "malloc-trim" for t in threading.enumerate())
    stop.set()


def test_arrow_uses_the_system_pool() -> None:
    assert os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system"  # set by importing ops
    pa = pytest.importorskip("pyarrow")
    assert pa.default_memory_pool().backend_name == "system"
