"""The FastAPI application factory."""

from __future__ import annotations

import time

from fastapi import Depends, FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core import tracing
from core.logs import new_trace_id, trace_id_var
from core.settings import Settings
from recall_api import export, health
from recall_api.errors import install_error_handlers
from recall_api.metrics import LATENCY, REQUESTS
from recall_api.routes import (
    add,
    admin,
    console,
    entities,
    entity_backfill,
    entity_update,
    items,
    manage,
    privacy,
    recall,
    session,
)
from recall_api.routes import context as context_route
from recall_api.routes import profile as profile_route
from recall_api.routes import users as users_route
from recall_api.state import ApiState, LifecycleRunner, install
from recall_api.text_rule import text_rule
from sinks.services import Services
from sinks.stores import Stores


class Trace:
    """ASGI middleware: the request's trace id (``x-trace-id``, else a new one) for the
    logs and the envelope, echoed as a response header; latency and count by route and
    code. Plain ASGI rather than ``@app.middleware("http")`` (Starlette's
    ``BaseHTTPMiddleware``), which runs every request through a task group and memory
    streams on the event loop all requests share: ~0.9 ms of CPU per request measured
    here (in-process ASGI client, a ten-memory envelope), against ~0 for this one."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = dict(scope["headers"]).get(b"x-trace-id", b"").decode("latin-1")
        trace_id = sent or new_trace_id()
        header = (b"x-trace-id", trace_id.encode("latin-1"))
        status = 500  # what a failure before the response started is counted as
        started = time.perf_counter()

        async def send_traced(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), header]
            await send(message)

        token = trace_id_var.set(trace_id)
        caller = tracing.attach_caller(scope["headers"])  # a caller's traceparent (core.tracing)
        try:
            await self.app(scope, receive, send_traced)
        finally:
            tracing.detach(caller)
            trace_id_var.reset(token)
            path = getattr(scope.get("route"), "path", "unmatched")
            LATENCY.labels(path, str(status)).observe(time.perf_counter() - started)
            REQUESTS.labels(path, str(status)).inc()


def create_app(
    settings: Settings,
    stores: Stores,
    services: Services | None = None,
    *,
    lifecycle_runner: LifecycleRunner | None = None,
) -> FastAPI:
    """Build the app around already-opened stores (the node or a test owns their lifetime),
    with its one container (``recall_api.state.ApiState``, built here).

    Without ``services`` only health, readiness, metrics and admin are served;
    ``lifecycle_runner``: the pass ``POST /admin/v1/lifecycle/run`` runs (the node's).
    """
    # every route, present and future: the text rule before any validation (40001)
    app = FastAPI(
        title="memstream", version="0.1.0", docs_url="/docs", dependencies=[Depends(text_rule)]
    )
    install(app, ApiState.build(settings, stores, services, lifecycle_runner=lifecycle_runner))
    # an add's body is at most its event; the slack is for the JSON around the turns
    install_error_handlers(app, max_body_bytes=settings.max_event_bytes + 64 * 1024)

    app.add_middleware(Trace)  # outermost of ours: every envelope carries its trace id

    app.include_router(health.router)
    app.include_router(admin.router)  # loopback only; a pass needs the lifecycle runner
    if services is not None:
        export.start_sweeper(services)  # expired export files leave the disk
        app.include_router(add.router)
        app.include_router(recall.router)
        for router in (manage.router, privacy.router, session.router, entities.router):
            app.include_router(router)
        app.include_router(profile_route.router)  # the user's profile (docs/api.md#profile)
        app.include_router(context_route.router)  # an agent's turn (docs/api.md#context)
        app.include_router(entity_update.router)  # rename, merge, split (docs/api.md#entityupdate)
        app.include_router(entity_backfill.router)  # admin: memstream entities backfill
        app.include_router(items.router)  # key-value items (docs/api.md#key-value-items)
        app.include_router(users_route.router)  # external user ids (docs/api.md#usersresolve)
        app.include_router(console.router)  # the web console's page (no data) and whoami
    return app
