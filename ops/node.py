"""The node process: the API and both dataflows in one process
(docs/architecture.md#processes-and-data-flow).

One process because chDB and Milvus Lite each lock their data dir. Started by
``memstream up`` as ``python -m ops.node DATA_DIR``; runs until SIGTERM. If Kafka is
not reachable yet, the API still starts (``/readyz`` answers 503) and topic creation
is retried in the background. A store whose vectors another embedding model made stops
it at start (exit 2) with a message naming both models and `memstream reembed`.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from functools import partial

import uvicorn

from core import tracing
from core.logs import setup_logging
from core.settings import Settings, SettingsError, get_settings
from dataflows.breaker import Breaker
from dataflows.ingest.flow import build_flow as build_ingest
from dataflows.ingest.sink import dead_letter_messages
from dataflows.lifecycle.flow import build_flow as build_lifecycle
from dataflows.lifecycle.schedule import LifecyclePasses
from dataflows.lifecycle.submit import KafkaVia
from dataflows.runner import FlowThread
from dataflows.runtime import Runtime, open_runtime
from ops.heap import limit_arenas, start_trimmer
from recall_api.app import create_app
from recall_api.changes import follow_changes
from recall_api.serving import api_base_url, server_config
from recall_api.state import api_state
from sinks.errors import ModelMismatch, StoreUnavailable
from sinks.flow_health import RestartLog
from sinks.keystore import check_bind
from sinks.stores import Stores

CONFIG_READY_S = 2.0  # how long the node waits for memory.config before serving

log = logging.getLogger("memstream.node")


def _ensure_topics_forever(stores: Stores, stop: threading.Event) -> None:
    delay = 0.5
    while not stop.is_set():
        try:
            stores.kafka.ensure_topics(timeout=10)
            return
        except StoreUnavailable as exc:
            log.warning("kafka not ready; retrying", extra={"fields": {"error": str(exc)}})
            stop.wait(delay)
            delay = min(delay * 2, 10)


def serve(settings: Settings) -> None:
    check_bind(settings)  # SettingsError: no key, yet asked to listen beyond loopback
    # memory.config followed while the models load (the live values before the first
    # request; Kafka may be down); ModelMismatch: another model made the store's vectors.
    # On the way out the stores and the follower close in reverse order.
    with open_runtime(settings, ready_s=CONFIG_READY_S) as rt:
        _serve(settings, rt)


def _serve(settings: Settings, rt: Runtime) -> None:
    stores = rt.stores
    stop = threading.Event()
    topics = threading.Thread(
        target=_ensure_topics_forever, args=(stores, stop), name="ensure-topics", daemon=True
    )
    topics.start()
    breaker = Breaker("ingest")  # lives as long as the process; the flow is rebuilt
    ingest = FlowThread(
        "ingest",
        lambda: build_ingest(rt, breaker=breaker),
        settings.data_path,
        stop=rt.stop,
        on_failure=rt.cache.clear,
        breaker=breaker,
        dead_letter=partial(dead_letter_messages, rt),
        restart_log=RestartLog("ingest", stores.redis.client),
    )
    ingest.start()
    lifecycle = FlowThread(
        "lifecycle",
        lambda: build_lifecycle(rt),
        settings.data_path,
        stop=rt.stop,
        restart_log=RestartLog("lifecycle", stores.redis.client),
    )
    lifecycle.start()
    passes = LifecyclePasses(rt, KafkaVia(stores))  # periodic passes; stop with rt.stop
    passes.start()
    services = rt.services  # the API serves from the flows' stores, cache and embedder
    # POST /admin/v1/lifecycle/run runs the passes; the app's settings are kept live
    app = create_app(settings, stores, services, lifecycle_runner=passes.run)
    # Writers in other processes (a standalone ingest, a second node) reach this
    # process's caches through memory.changes; its own writes are applied in-process.
    follower = follow_changes(api_state(app), rt.cache, stores.kafka, rt.memories.origin)
    server = uvicorn.Server(server_config(app, settings))  # HTTPS when given a certificate
    started = time.monotonic()
    log.info(
        "node starting",
        extra={
            "fields": {
                "api": api_base_url(settings),
                "data_dir": str(settings.data_path),
            }
        },
    )
    try:
        server.run()
    finally:
        stop.set()
        follower.stop()
        ingest.stop()
        lifecycle.stop()
        passes.join()
        log.info("node stopped", extra={"fields": {"uptime_s": round(time.monotonic() - started)}})


def main() -> int:
    limit_arenas()  # before the threads start: each would take an arena of its own (ops.heap)
    try:
        settings = get_settings()
    except SettingsError as exc:
        print(f"memstream node: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings.log_level, settings.log_json)
    tracing.setup(settings, "memstream-node")  # OTLP traces when otel_endpoint is set
    start_trimmer()  # RSS follows the heap really in use (ops.heap)
    try:
        serve(settings)
    except (ModelMismatch, SettingsError) as exc:
        print(f"memstream node: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
