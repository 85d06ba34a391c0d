"""The FastAPI application factory."""

from __future__ import annotations

import time

from fastapi import FastAPI, Request

from core.logs import new_trace_id, trace_id_var
from core.settings import Settings
from recall_api import export, health
from recall_api.errors import install_error_handlers
from recall_api.metrics import LATENCY, REQUESTS
from recall_api.routes import add, admin, console, manage, privacy, recall, session
from recall_api.services import Services
from sinks.stores import Stores


def create_app(settings: Settings, stores: Stores, services: Services | None = None) -> FastAPI:
    """Build the app around already-opened stores (the node or a test owns their lifetime).

    Without ``services`` only health, readiness and metrics are served.
    """
    app = FastAPI(title="memstream", version="0.1.0", docs_url="/docs")
    app.state.settings = settings
    app.state.stores = stores
    app.state.services = services
    # an add's body is at most its event; the slack is for the JSON around the turns
    install_error_handlers(app, max_body_bytes=settings.max_event_bytes + 64 * 1024)

    @app.middleware("http")
    async def _trace(request: Request, call_next):  # type: ignore[no-untyped-def]
        trace_id = request.headers.get("x-trace-id") or new_trace_id()
        token = trace_id_var.set(trace_id)
        started = time.perf_counter()
        try:
            response = await call_next(request)
        finally:
            trace_id_var.reset(token)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        code = str(response.status_code)
        LATENCY.labels(path, code).observe(time.perf_counter() - started)
        REQUESTS.labels(path, code).inc()
        response.headers["x-trace-id"] = trace_id
        return response

    app.include_router(health.router)
    app.include_router(admin.router)  # loopback only; needs app.state.lifecycle_runner
    if services is not None:
        export.start_sweeper(services)  # expired export files leave the disk
        app.include_router(add.router)
        app.include_router(recall.router)
        for router in (manage.router, privacy.router, session.router):
            app.include_router(router)
        app.include_router(console.router)  # the web console's page (no data) and whoami
    return app
