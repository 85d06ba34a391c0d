"""Run the lifecycle flow on its own: ``python -m bytewax.run dataflows.lifecycle.main:flow``.

Settings come from the environment (``MEMSTREAM_*``) as for the node. Besides the flow
on ``memory.recall_hits``, this process runs the periodic passes (decay/expiry →
archive, purge, reconcile) on a thread; their commands go through ``memory.commands``
to the ingest flow's keyed writer, which must run somewhere (the node or its own
process) for passes and recovery to be applied.
"""

from __future__ import annotations

from dataflows.bootstrap import flow_process
from dataflows.lifecycle.flow import build_flow
from dataflows.lifecycle.schedule import LifecyclePasses
from dataflows.lifecycle.submit import KafkaVia

_rt = flow_process("lifecycle")
passes = LifecyclePasses(_rt, KafkaVia(_rt.stores))
passes.start()
flow = build_flow(_rt)
