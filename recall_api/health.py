"""Liveness, readiness and metrics endpoints."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Request, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from memstream.schemas.api import Health
from recall_api.errors import model_json
from recall_api.metrics import READY
from recall_api.state import api_state
from sinks.flow_health import LOOP_RESTARTS, LOOP_WINDOW_S

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
async def healthz() -> Response:
    """The process is alive; says nothing about dependencies."""
    return model_json(Health(status="ok"))


@router.get("/readyz", response_model=Health, responses={503: {"model": Health}})
async def readyz(request: Request) -> Response:
    """200 only when Kafka, Redis, ClickHouse and Milvus all answer."""
    stores = api_state(request.app).stores
    started = time.perf_counter()
    checks = await asyncio.to_thread(stores.check)
    for name, ok in checks.items():
        READY.labels(name).set(1 if ok else 0)
    ok = all(checks.values())
    body = Health(
        status="ready" if ok else "unavailable",
        checks=checks,
        took_ms=round((time.perf_counter() - started) * 1000, 1),
    )
    return model_json(body, status_code=200 if ok else 503)


@router.get("/healthz/ingest", response_model=Health, responses={503: {"model": Health}})
async def healthz_ingest(request: Request) -> Response:
    """503 while the ingest flow is crash-looping (>= 3 restarts in 5 minutes, in any
    process): adds are accepted by nobody then. Recall is unaffected (``/readyz``)."""
    restarts = await asyncio.to_thread(api_state(request.app).ingest_watch.restarts)
    looping = restarts >= LOOP_RESTARTS
    body = Health(
        status="crash_looping" if looping else "ok",
        checks={"restarts": restarts, "window_s": LOOP_WINDOW_S, "flow": "ingest"},
    )
    return model_json(body, status_code=503 if looping else 200)


@router.get("/metrics", response_model=None, response_class=PlainTextResponse)
async def metrics() -> Response:
    """Prometheus' text format."""
    # off the event loop: in the node a scrape asks the broker for the flows' lag
    body = await asyncio.to_thread(generate_latest)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
