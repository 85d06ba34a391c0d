"""The start of a process that runs flows: the ingest and lifecycle processes
(``dataflows.*.main``) and ``memstream dataflow`` (``ops.process_cmd``).

Both open their Runtime with :func:`dataflows.runtime.open_runtime`: stores set up,
topics ensured, the live thresholds of ``memory.config`` followed before the first
input, ``ModelMismatch`` when another embedding model made the store's vectors (the
stores are closed again).
"""

from __future__ import annotations

import contextlib

from core import tracing
from core.logs import setup_logging
from core.settings import get_settings
from dataflows.runtime import Runtime, open_runtime
from sinks.errors import ModelMismatch

FLOW_READY_S = 5.0  # how long a flow process waits for memory.config before its input

# ``python -m bytewax.run`` takes the flow and runs it until the process ends: what the
# flow was built over stays open as long (held here, never collected and closed early)
_PROCESS = contextlib.ExitStack()


def flow_process(name: str) -> Runtime:
    """``python -m bytewax.run dataflows.<name>.main:flow``: settings from the
    environment (``MEMSTREAM_*``), logging, the Runtime open for the process's life; a
    store of another model ends the process with the reason."""
    settings = get_settings()
    setup_logging(settings.log_level, settings.log_json)
    tracing.setup(settings, f"memstream-{name}")  # OTLP traces when otel_endpoint is set
    try:
        return _PROCESS.enter_context(open_runtime(settings, topics=True, ready_s=FLOW_READY_S))
    except ModelMismatch as exc:
        raise SystemExit(f"memstream {name}: {exc}") from None
