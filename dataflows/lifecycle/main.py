"""Run the lifecycle flow on its own: ``python -m bytewax.run dataflows.lifecycle.main:flow``.

Settings come from the environment (``MEMSTREAM_*``) as for the node. Besides the flow
on ``memory.recall_hits``, this process runs the periodic passes (decay/expiry →
archive, purge, reconcile) on a thread; their commands go through ``memory.commands``
to the ingest flow's keyed writer, which must run somewhere (the node or its own
process) for passes and recovery to be applied.
"""

from __future__ import annotations

from core.logs import setup_logging
from core.settings import get_settings
from dataflows.lifecycle.flow import build_flow
from dataflows.lifecycle.schedule import LifecyclePasses
from dataflows.lifecycle.submit import KafkaVia
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
    raise SystemExit(f"memstream lifecycle: {exc}") from None
_config = follow_config(_stores.kafka, _settings, _rt)  # live thresholds (memory.config)
_config.ready.wait(5.0)
passes = LifecyclePasses(_rt, KafkaVia(_stores))
passes.start()
flow = build_flow(_rt)
