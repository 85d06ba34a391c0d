"""Run the ingest flow on its own: ``python -m bytewax.run dataflows.ingest.main:flow``.

Settings come from the environment (``MEMSTREAM_*``) as for the node; add ``-r DIR -s
SECS -b SECS`` for recovery (create the store once with ``python -m bytewax.recovery``).
This flow is built for one worker (one embed shard: with ``-w`` it runs, but one worker
embeds everything); ``memstream dataflow ingest -w N`` builds it for its cluster.
"""

from __future__ import annotations

from core.logs import setup_logging
from core.settings import get_settings
from dataflows.ingest.flow import build_flow
from dataflows.runtime import Runtime
from sinks.config_topic import follow_config
from sinks.errors import ModelMismatch
from sinks.stores import Stores

_settings = get_settings()
setup_logging(_settings.log_level, _settings.log_json)
_stores = Stores.from_settings(_settings)
_stores.setup()
_stores.kafka.ensure_topics()
try:
    _rt = Runtime.build(_settings, _stores)
except ModelMismatch as exc:  # another embedding model made the store's vectors
    raise SystemExit(f"memstream ingest: {exc}") from None
_config = follow_config(_stores.kafka, _settings, _rt)  # live thresholds (memory.config)
_config.ready.wait(5.0)
flow = build_flow(_rt)
