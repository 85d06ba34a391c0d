"""Run the ingest flow on its own: ``python -m bytewax.run dataflows.ingest.main:flow``.

Settings come from the environment (``MEMSTREAM_*``) as for the node; add ``-r DIR -s
SECS -b SECS`` for recovery (create the store once with ``python -m bytewax.recovery``).
This flow is built for one worker (one embed shard: with ``-w`` it runs, but one worker
embeds everything); ``memstream dataflow ingest -w N`` builds it for its cluster.
"""

from __future__ import annotations

from dataflows.bootstrap import flow_process
from dataflows.ingest.flow import build_flow

flow = build_flow(flow_process("ingest"))
