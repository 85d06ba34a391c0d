"""Where a bench ran: the machine, Python, the packages and the code, for its report.

Two runs compare fairly only on the same machine and code, so every report records the
CPU (count and model), RAM, Python, the versions of memstream's own dependencies (read
from its installed metadata) and the git commit of the checkout (``dirty`` when the
tree has uncommitted changes).
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _cpu_model() -> str:
    # /proc/cpuinfo: psutil gives counts and frequencies, not the CPU's model name
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_mb() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def _declared() -> list[str]:
    """The checkout's own dependencies: the client's (``pyproject.toml``), the service's
    (``server/pyproject.toml``) and the ``bench`` extra's (the installed metadata may
    predate them), else the installed packages'."""
    try:
        client = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
        server = tomllib.loads((REPO / "server" / "pyproject.toml").read_text())["project"]
        bench = client.get("optional-dependencies", {}).get("bench", [])
        return client["dependencies"] + server["dependencies"] + bench
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        pass
    try:
        return (metadata.requires("memstream") or []) + (
            metadata.requires("memstream-server") or []
        )
    except metadata.PackageNotFoundError:
        return []


def package_versions() -> dict[str, str]:
    """memstream's declared dependencies and the ``bench`` extra's as installed
    (``"missing"`` when not)."""
    required = _declared()
    names = {
        re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0]
        for r in required
        if "extra ==" not in r or re.search(r"extra == ['\"]bench['\"]", r)
    }
    out = {}
    for name in sorted(names | {"memstream", "memstream-server"}, key=str.lower):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def git_commit(repo: Path = REPO) -> dict[str, Any]:
    """``{"commit", "dirty"}`` of the checkout, or ``{"commit": None}`` outside git."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain"))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def machine_info() -> dict[str, Any]:
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "cpu_model": _cpu_model(),
        "ram_mb": _ram_mb(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "packages": package_versions(),
        "git": git_commit(),
    }
