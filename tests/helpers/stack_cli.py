"""Run the `memstream` CLI as a user would, on a private stack (free ports, temp data dir)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from ops.procs import free_port

REPO = Path(__file__).resolve().parents[2]


def cli(env: dict[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ops.cli", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _free_pair() -> int:
    """A free port whose next one is free too: ``memstream up`` puts the KRaft controller
    on the broker's port + 1 (a CI run failed when an ephemeral port sat there)."""
    for _ in range(100):
        port = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two adjacent free ports on 127.0.0.1")


def private_stack_env(data_dir: Path) -> tuple[dict[str, str], dict[str, int]]:
    """Environment for a stack of its own: no MEMSTREAM_* of the caller leaks in."""
    ports = {"api": free_port(), "kafka": _free_pair(), "redis": free_port()}
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env.update(
        {
            "MEMSTREAM_DATA_DIR": str(data_dir),
            "MEMSTREAM_API_PORT": str(ports["api"]),
            "MEMSTREAM_KAFKA_BOOTSTRAP": f"127.0.0.1:{ports['kafka']}",
            "MEMSTREAM_REDIS_URL": f"redis://127.0.0.1:{ports['redis']}/0",
            "MEMSTREAM_KAFKA_PARTITIONS": "2",
        }
    )
    return env, ports
