"""The lifecycle ("decay") side of memstream (docs/architecture.md#lifecycle).

- ``rules``: pure planning — which memory to archive (decayed / expired) or purge, and
  the weight recovery of a recall hit. No I/O; the clock is a parameter.
- ``commands``: the ``lifecycle`` and ``recall_hits`` command handlers. They run inside
  the ingest flow's keyed writer, so lifecycle mutations never race with ingest.
- ``scan``: one pass — plan from ClickHouse, send one ``lifecycle`` command per user.
- ``reconcile``: ClickHouse ↔ Milvus ↔ hot-cache drift repair (part of a pass).
- ``submit``: how a pass's commands are applied (through Kafka, or directly).
- ``flow``: the dataflow on ``memory.recall_hits``; ``schedule``: periodic passes.
"""
