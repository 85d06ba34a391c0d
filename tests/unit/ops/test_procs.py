"""ops.procs and ops.bench.sampler: processes found by their command line, sampled."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from ops.bench.sampler import ProcSampler, cpu_seconds, rss_mb
from ops.procs import Proc


def test_a_process_is_ours_by_its_marker_and_stop_leaves_no_zombie(tmp_path):
    proc = Proc("sleeper", tmp_path / "run", tmp_path / "log", marker="memstream-test-sleeper")
    argv = [sys.executable, "-c", "import time; time.sleep(60)", "memstream-test-sleeper"]
    pid = proc.start(argv)
    assert proc.pid() == pid
    other = Proc("sleeper", tmp_path / "run", tmp_path / "log", marker="another-marker")
    assert other.pid() is None and not other.pidfile.exists()  # pid reused: not ours
    proc.pidfile.write_text(str(pid))
    assert proc.stop(timeout=5) is True  # our child: stopped and reaped
    assert proc.pid() is None and proc.stop() is False


def test_the_sampler_reads_cpu_and_rss_and_stops_when_the_process_is_gone():
    assert cpu_seconds(os.getpid()) > 0 and rss_mb(os.getpid()) > 1
    with ProcSampler(interval_s=0.05) as sampler:
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            pass  # burn CPU
    summary = sampler.summary()
    assert summary["cpu_s"] > 0.1 and summary["rss_mb_max"] >= summary["rss_mb_start"] > 1
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    sampler = ProcSampler(pid=child.pid, interval_s=0.05).start()
    child.wait()  # exited and reaped: the pid is gone
    sampler._thread.join(5)
    assert not sampler._thread.is_alive()  # the sampling thread ended by itself
    sampler.stop()  # and stopping afterwards is quiet
    assert len(sampler.samples) >= 2
