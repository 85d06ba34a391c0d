"""A process's CPU and resident memory, read with psutil while a bench runs.

The benches serve the API and run the flows inside their own process (the node's
setup), so "node CPU and RSS" is that process's: ``ProcSampler(os.getpid())`` samples it
in a thread. ``bench soak`` watches a node subprocess by its pid the same way.
CPU is user + system time of every thread; cores = CPU seconds per wall second.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psutil


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used (all its threads); psutil.Error
    once it is gone."""
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def rss_mb(pid: int) -> float:
    return round(psutil.Process(pid).memory_info().rss / (1024 * 1024), 1)


class ProcSampler:
    """Samples ``pid`` every ``interval_s`` between ``start()`` and ``stop()`` (or as a
    context manager): ``samples`` are ``{"t_s", "cpu_cores", "rss_mb"}``, the cores
    averaged over the interval before each sample."""

    def __init__(self, pid: int | None = None, interval_s: float = 1.0) -> None:
        self.pid = os.getpid() if pid is None else pid
        self.interval_s = interval_s
        self.samples: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)
        self._began = self._cpu0 = 0.0
        self._last: tuple[float, float] = (0.0, 0.0)

    def __enter__(self) -> ProcSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ProcSampler:
        self._began = time.monotonic()
        self._cpu0 = cpu_seconds(self.pid)
        self._last = (self._began, self._cpu0)
        self.samples.append({"t_s": 0.0, "cpu_cores": 0.0, "rss_mb": rss_mb(self.pid)})
        self._thread.start()
        return self

    def _sample(self) -> None:
        now, cpu = time.monotonic(), cpu_seconds(self.pid)
        then, cpu_then = self._last
        self._last = (now, cpu)
        self.samples.append({
            "t_s": round(now - self._began, 2),
            "cpu_cores": round((cpu - cpu_then) / max(1e-9, now - then), 3),
            "rss_mb": rss_mb(self.pid),
        })  # fmt: skip

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._sample()
            except psutil.Error:
                return  # the process is gone

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(5)
        try:
            self._sample()
        except psutil.Error:
            pass

    def summary(self) -> dict[str, Any]:
        """CPU seconds, mean and peak cores, RSS at start, end and peak (MB)."""
        wall = self._last[0] - self._began
        rss = [s["rss_mb"] for s in self.samples]
        return {
            "seconds": round(wall, 2),
            "cpu_s": round(self._last[1] - self._cpu0, 2),
            "cpu_cores_mean": round((self._last[1] - self._cpu0) / max(1e-9, wall), 3),
            "cpu_cores_max": max((s["cpu_cores"] for s in self.samples[1:]), default=0.0),
            "rss_mb_start": rss[0],
            "rss_mb_end": rss[-1],
            "rss_mb_max": max(rss),
        }
