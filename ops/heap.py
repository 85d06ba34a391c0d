"""Hand freed heap back to the OS in the long-running processes (node, api, dataflow).

``bench soak`` showed glibc malloc's arenas growing while the bytes in use stayed flat
(``GET /admin/v1/stats``: in use 372.8 → 372.0 MB, free inside the arenas 53.9 → 71.6 MB
over 5 minutes): with ~180 threads the allocations spread over many arenas, and a freed
block inside an arena is not returned until the whole top of that arena is free. glibc's
``malloc_trim(0)`` walks every arena and returns the free pages inside them
(``madvise``), so RSS follows what is really in use. It takes the arena locks for a few
milliseconds, so it runs once a minute on a daemon thread. No library does this one
call; ``ctypes`` reaches it. Where there is no ``malloc_trim`` (musl, macOS) nothing runs.
"""

from __future__ import annotations

import ctypes
import logging
import threading

log = logging.getLogger(__name__)

TRIM_INTERVAL_S = 60.0
_started = threading.Event()


def _find_trim():  # noqa: ANN202 - a ctypes function, or None
    try:
        fn = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


_malloc_trim = _find_trim()  # glibc only


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
