"""An in-process API (FastAPI TestClient) over the session's stores and runtime."""

from __future__ import annotations

from typing import Any


def api_client(settings, stores, runtime, **client_kwargs: Any):
    """A TestClient of ``create_app`` with Services built from ``runtime`` (not entered)."""
    from fastapi.testclient import TestClient

    from recall_api.app import create_app
    from sinks.services import Services

    services = Services(
        settings,
        stores,
        runtime.memories,
        runtime.cache,
        runtime.tasks,
        runtime.switches,
        runtime.embedder,
    )
    return TestClient(create_app(settings, stores, services), **client_kwargs)
