"""How long a flow's epochs (and so its snapshots) last, by how many workers run it.

Kept apart from ``dataflows.runner`` so the command line can show the default without
importing Bytewax.
"""

from __future__ import annotations

# Seconds between epochs (and snapshots). Bytewax 0.21.1 holds a worker's input back at
# an epoch's end until every worker has finished the epoch before, and meanwhile
# re-activates that input at once, over and over (``activate_after`` of zero): a worker
# whose peer is in a long step (a writer's 512 facts, 0.5-1 s) spins. perf, RealMem with
# two workers: one worker's thread took 18-21 % of all the CPU samples, inside Bytewax's
# scheduler, with no Python at all; two workers ran 133-139 turns/s at 2 s epochs and
# 175-181 at 10 s (alternating runs). One worker has no peer to wait for, so it keeps the
# shorter replay after a crash.
EPOCH_S = 2.0
EPOCH_S_MANY_WORKERS = 10.0


def epoch_seconds(workers: int) -> float:
    """The epoch (and snapshot) interval for a cluster of ``workers`` workers in all."""
    return EPOCH_S if workers <= 1 else EPOCH_S_MANY_WORKERS
