"""An API-only process: ``python -m recall_api.main`` (the recall tier of
docs/architecture.md#processes-and-data-flow).

For the distributed deployment, where the ingest and lifecycle dataflows run as their
own Bytewax processes against the same Kafka, ClickHouse server, Milvus and Redis: this
process serves the HTTP API, and learns of their writes through ``memory.changes``.
The embedded stores (chDB, Milvus Lite) lock their data dir, so an API-only process needs
server URLs (``MEMSTREAM_CLICKHOUSE_URL=http://…``, ``MEMSTREAM_MILVUS_URI=http://…``);
on one machine, ``memstream up`` runs the node, which hosts everything in one process.
"""

from __future__ import annotations

import sys

import uvicorn

from core import tracing
from core.logs import setup_logging
from core.settings import Settings, SettingsError, get_settings
from models.factory import build_embedder
from recall_api.app import create_app
from recall_api.changes import follow_changes
from recall_api.serving import server_config
from recall_api.state import api_state
from sinks.errors import ModelMismatch
from sinks.keystore import check_bind
from sinks.services import Services, open_services


def main() -> int:
    try:
        settings = get_settings()
    except SettingsError as exc:
        print(f"memstream api: {exc}", file=sys.stderr)
        return 2
    try:
        check_bind(settings)  # no key, yet asked to listen beyond loopback (as the node)
    except SettingsError as exc:
        print(f"memstream api: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings.log_level, settings.log_json)
    tracing.setup(settings, "memstream-api")  # OTLP traces when otel_endpoint is set
    try:
        # memory.config followed while the model loads; everything closed in reverse after
        with open_services(settings, lambda: build_embedder(settings)) as services:
            _serve(settings, services)
    except ModelMismatch as exc:  # another embedding model made the store's vectors
        print(f"memstream api: {exc}", file=sys.stderr)
        return 2
    return 0


def _serve(settings: Settings, services: Services) -> None:
    app = create_app(settings, services.stores, services)  # its settings kept live
    follower = follow_changes(
        api_state(app), services.cache, services.stores.kafka, services.memories.origin
    )
    try:
        uvicorn.Server(server_config(app, settings)).run()  # HTTPS when given a certificate
    finally:
        follower.stop()


if __name__ == "__main__":
    sys.exit(main())
