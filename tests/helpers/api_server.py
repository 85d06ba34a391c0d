"""A real HTTP API (uvicorn on a free loopback port, in a thread) over the session's
stores and runtime, for clients that must talk over the network (``memstream.Client``,
the MCP server subprocess). ``keys`` makes API keys the way ``memstream keys create``
does, in a key file of its own."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import uvicorn

from ops.procs import free_port
from recall_api.app import create_app
from recall_api.serving import server_config
from sinks import keystore
from sinks.services import Services


@contextlib.contextmanager
def running_api(settings, stores, runtime) -> Iterator[str]:
    """The API's base URL while it serves; stopped on the way out."""
    services = Services(
        settings,
        stores,
        runtime.memories,
        runtime.cache,
        runtime.tasks,
        runtime.switches,
        runtime.embedder,
    )
    app = create_app(settings, stores, services)
    port = free_port()
    server = uvicorn.Server(
        server_config(app, settings, host="127.0.0.1", port=port, lifespan="off")
    )
    thread = threading.Thread(target=server.run, name=f"api-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the API did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def make_key(path: Path, role: str = "app", apps: tuple[str, ...] = (), tenant="default") -> str:
    key, _ = keystore.create(
        path, tenant, role, list(apps), global_grant=False, now=datetime.now(UTC)
    )
    return key
