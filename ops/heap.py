"""Hand freed heap back to the OS in the long-running processes (node, api, dataflow).

``bench soak`` showed glibc malloc's arenas growing while the bytes in use stayed flat
(``GET /admin/v1/stats``: in use 372.8 → 372.0 MB, free inside the arenas 53.9 → 71.6 MB
over 5 minutes): with ~180 threads the allocations spread over many arenas, and a freed
block inside an arena is not returned until the whole top of that arena is free. glibc's
``malloc_trim(0)`` walks every arena and returns the free pages inside them
(``madvise``), so RSS follows what is really in use. It takes the arena locks for a few
milliseconds, so it runs once a minute on a daemon thread. No library does this one
call; ``ctypes`` reaches it. Where there is no ``malloc_trim`` (musl, macOS) nothing runs.

The trim returns free pages, not a fragmented arena's holes smaller than a page, and glibc
gives each new thread an arena of its own, up to 8 per core. Two 30-minute soaks back to
back (2 cores, ~185 threads, docs/bench/20261203T105259Z and 20261203T112548Z): with
glibc's default the free bytes kept in the arenas rose 59 → 91 MB (1.14 MB/min); capped
at 2 arenas they stayed 25-40 MB (0.13 MB/min). Recall did not measurably slow: three
interleaved pairs of ``bench recall`` saturated at 233/267/292 recalls/s capped against
263/252/224 uncapped. So the long-running processes cap the arenas at one per core, at
least 2 (:func:`limit_arenas`), unless the operator set ``MALLOC_ARENA_MAX``, which
glibc reads itself. Their memory is mostly allocated under the GIL (pymalloc) or by
allocators of their own (chDB's jemalloc, onnxruntime's arena), so few threads contend
for a glibc arena at once.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading

log = logging.getLogger(__name__)

TRIM_INTERVAL_S = 60.0
M_ARENA_MAX = -8  # glibc's <malloc.h>
_started = threading.Event()


def _find(name: str, argtypes: list[type]):  # noqa: ANN202 - a ctypes function, or None
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except (AttributeError, OSError):
        return None
    fn.argtypes, fn.restype = argtypes, ctypes.c_int
    return fn


_malloc_trim = _find("malloc_trim", [ctypes.c_size_t])  # glibc only
_mallopt = _find("mallopt", [ctypes.c_int, ctypes.c_int]) if _malloc_trim else None


def arena_cap() -> int:
    """The arenas :func:`limit_arenas` allows: one per core this process may run on, at
    least 2."""
    return max(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2)


def limit_arenas(cap: int | None = None) -> bool:
    """Cap glibc's malloc arenas (default :func:`arena_cap`); call it first thing in a
    process, as threads that already allocated keep their arenas. False when nothing was
    set: ``MALLOC_ARENA_MAX`` is in the environment (the operator's choice wins), or this
    is not glibc."""
    if _mallopt is None or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return bool(_mallopt(M_ARENA_MAX, cap or arena_cap()))


def trim() -> bool:
    """One ``malloc_trim(0)``; True when glibc returned memory to the OS."""
    return bool(_malloc_trim(0)) if _malloc_trim is not None else False


def start_trimmer(interval_s: float = TRIM_INTERVAL_S, stop: threading.Event | None = None) -> bool:
    """Start the once-a-minute trim thread (once per process); False when not started:
    already running, or no ``malloc_trim`` here."""
    if _malloc_trim is None or _started.is_set():
        return False
    _started.set()
    done = stop or threading.Event()

    def loop() -> None:
        while not done.wait(interval_s):
            try:
                trim()
            except Exception:  # never take the process down for a trim
                log.exception("malloc_trim failed")

    threading.Thread(target=loop, name="malloc-trim", daemon=True).start()
    return True
