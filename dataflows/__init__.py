"""Bytewax dataflows and their operators.

``ingest`` turns conversations from ``memory.conversations`` into memories (parse,
switch check, session window, extract, embed, hash dedup, evolution, capacity,
sinks); ``lifecycle`` applies recall recovery, decay thresholds, archive, purge and
reconcile. Each flow is built by a factory so tests can swap its ends, and runs
in-process in the node or alone under ``python -m bytewax.run``.
"""
