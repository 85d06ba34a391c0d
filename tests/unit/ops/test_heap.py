"""ops.heap: malloc_trim returns the free pages inside glibc's arenas to the OS."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
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


def test_a_process_that_imports_ops_first_runs_arrow_on_the_system_pool() -> None:
    pytest.importorskip("pyarrow")
    # a process of its own: in this one pyarrow may have loaded before ops did
    code = "import ops, pyarrow; print(pyarrow.default_memory_pool().backend_name)"
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "system", out.stderr


# Eight threads alive at once, each allocating through glibc (2 KB bytearrays are past
# pymalloc's 512-byte limit), then glibc's own account of its arenas (malloc_info's XML
# has one <heap> per arena).
_ARENAS = """
import ctypes, re, sys, tempfile, threading
from ops import heap
print(heap.limit_arenas(int(sys.argv[1])) if sys.argv[1] != "-" else "-")
gate = threading.Barrier(8)
def work():
    gate.wait()
    held = [bytearray(2000) for _ in range(100)]
    gate.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(None)
libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
with tempfile.NamedTemporaryFile() as out:
    f = libc.fopen(out.name.encode(), b"w"); libc.malloc_info(0, f); libc.fclose(f)
    print(len(re.findall("<heap nr=", open(out.name).read())))
"""


def _arenas(cap: str, **env: str) -> tuple[str, int]:
    base = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run(
        [sys.executable, "-c", _ARENAS, cap], env=base | env, capture_output=True, text=True
    )
    said, arenas = out.stdout.split()
    return said, int(arenas)


@pytest.mark.skipif(not _has_trim(), reason="glibc malloc only")
def test_limit_arenas_caps_the_arenas_threads_take() -> None:
    assert _arenas("-")[1] > 2  # without the cap each thread took an arena of its own
    assert _arenas("2") == ("True", 2)


@pytest.mark.skipif(not _has_trim(), reason="glibc malloc only")
def test_the_operators_malloc_arena_max_wins() -> None:
    assert _arenas("2", MALLOC_ARENA_MAX="4") == ("False", 4)  # glibc applied the env's 4


def test_the_default_cap_is_a_core_each_and_at_least_two() -> None:
    assert heap.arena_cap() == max(2, len(os.sched_getaffinity(0)))
