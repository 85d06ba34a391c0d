"""An API-only process: ``python -m recall_api.main`` (the recall tier of DESIGN §1).

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

from core.logs import setup_logging
from core.settings import SettingsError, get_settings
from models.factory import build_embedder
from recall_api.app import create_app
from recall_api.changes import follow_changes
from recall_api.serving import server_config
from sinks.config_topic import follow_config
from sinks.errors import ModelMismatch
from sinks.keystore import check_bind
from sinks.services import Services
from sinks.stores import Stores


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
    stores = Stores.from_settings(settings)
    stores.setup()
    try:
        services = Services.build(settings, stores, build_embedder(settings))
    except ModelMismatch as exc:  # another embedding model made the store's vectors
        print(f"memstream api: {exc}", file=sys.stderr)
        stores.close()
        return 2
    app = create_app(settings, stores, services)
    follower = follow_changes(app.state, services.cache, stores.kafka, services.memories.origin)
    config = follow_config(stores.kafka, settings, services, app.state)  # live thresholds
    config.ready.wait(2.0)
    try:
        uvicorn.Server(server_config(app, settings)).run()  # HTTPS when given a certificate
    finally:
        config.stop()
        follower.stop()
        stores.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
