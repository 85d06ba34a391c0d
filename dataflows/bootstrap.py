"""The start of a process that runs flows: one function for the ingest and lifecycle
processes (``dataflows.*.main``) and ``memstream dataflow`` (``ops.process_cmd``).

Stores set up, topics ensured, the Runtime built (``ModelMismatch`` when another
embedding model made the store's vectors: the stores are closed again), and the live
thresholds of ``memory.config`` followed before the first input.
"""

from __future__ import annotations

from core.logs import setup_logging
from core.settings import Settings, get_settings
from dataflows.runtime import Runtime
from sinks.config_topic import ConfigFollower, follow_config
from sinks.errors import ModelMismatch
from sinks.stores import Stores


def start_runtime(settings: Settings) -> tuple[Runtime, ConfigFollower]:
    """The runtime of ``settings`` and its config follower (stop both with the stores)."""
    stores = Stores.from_settings(settings)
    stores.setup()
    try:
        stores.kafka.ensure_topics()
        rt = Runtime.build(settings, stores)
    except BaseException:
        stores.close()
        raise
    config = follow_config(stores.kafka, settings, rt)  # live thresholds (memory.config)
    config.ready.wait(5.0)
    return rt, config


def flow_process(name: str) -> Runtime:
    """``python -m bytewax.run dataflows.<name>.main:flow``: settings from the
    environment (``MEMSTREAM_*``), logging, :func:`start_runtime`; a store of another
    model ends the process with the reason."""
    settings = get_settings()
    setup_logging(settings.log_level, settings.log_json)
    try:
        rt, _config = start_runtime(settings)  # the follower runs on its own thread
    except ModelMismatch as exc:
        raise SystemExit(f"memstream {name}: {exc}") from None
    return rt
