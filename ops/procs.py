"""Start, find and stop the processes of the local stack, by pid file.

A pid file alone is not trusted (pids are reused): a process counts as ours only if
its command line still carries the marker we started it with.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil


class StackError(RuntimeError):
    """A local service could not be started or stopped; the message says which and why."""


@dataclass(frozen=True)
class Proc:
    name: str
    run_dir: Path
    log_dir: Path
    marker: str  # a string that must appear in the process's command line

    @property
    def pidfile(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    @property
    def logfile(self) -> Path:
        return self.log_dir / f"{self.name}.log"

    def pid(self) -> int | None:
        """The pid of our running process, or None (a stale pid file is removed)."""
        try:
            pid = int(self.pidfile.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if _cmdline_has(pid, self.marker):
            return pid
        self.pidfile.unlink(missing_ok=True)
        return None

    def start(
        self, argv: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> int:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.logfile, "ab") as log:
            proc = subprocess.Popen(
                list(argv),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        self.pidfile.write_text(str(proc.pid))
        # Between fork and exec the child still shows our command line: wait for the exec.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and proc.poll() is None:
            if _cmdline_has(proc.pid, self.marker):
                break
            time.sleep(0.01)
        return proc.pid

    def stop(self, timeout: float = 30.0) -> bool:
        """SIGTERM, wait, then SIGKILL; True when something was stopped."""
        pid = self.pid()
        if pid is None:
            return False
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.1)
        if _alive(pid):
            _signal_group(pid, signal.SIGKILL)
            while _alive(pid):
                time.sleep(0.05)
        self.pidfile.unlink(missing_ok=True)
        return True

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.logfile.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""


def _alive(pid: int) -> bool:
    try:
        if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            return True
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # someone else's, but there
    try:  # a zombie child of ours counts as gone
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return False


def _cmdline_has(pid: int, marker: str) -> bool:
    if not _alive(pid):
        return False
    try:
        return marker in " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return False


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def port_open(host: str, port: int, timeout: float = 0.3) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(
    check: Callable[[], bool],
    timeout: float,
    what: str,
    proc: Proc | None = None,
    interval: float = 0.2,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if proc is not None and proc.pid() is None:
            raise StackError(f"{what}: process exited; last log lines:\n{proc.tail()}")
        time.sleep(interval)
    tail = f"; last log lines:\n{proc.tail()}" if proc else ""
    raise StackError(f"{what}: not ready after {timeout:.0f}s{tail}")
