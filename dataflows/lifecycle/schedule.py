"""Periodic lifecycle passes, one at a time, on a thread beside the flows.

The node (and ``main.py`` when the lifecycle flow runs alone) starts one
:class:`LifecyclePasses`: a pass every ``lifecycle_interval_s`` with the wall clock, and
``run(now)`` for the admin endpoint / CLI with an explicit clock. A lock keeps a manual
pass and a periodic one from overlapping. The first periodic pass waits one interval
(capped at ``first_delay_s``) so a restarting node is not busy at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import UTC, datetime

from core.logs import describe_error
from dataflows.lifecycle.scan import PassSummary, run_pass
from dataflows.lifecycle.submit import Via
from dataflows.runtime import Runtime

log = logging.getLogger(__name__)


class LifecyclePasses:
    def __init__(self, rt: Runtime, via: Via, first_delay_s: float = 60.0):
        self.rt = rt
        self.via = via
        self.first_delay_s = first_delay_s
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.last: PassSummary | None = None

    def run(
        self,
        now: datetime | None = None,
        users: Iterable[int] | None = None,
        tenant: str | None = None,
    ) -> PassSummary:
        """One pass at ``now`` (default: the wall clock) over every tenant, or ``tenant``
        only; waits for a pass in progress."""
        now = now or datetime.now(UTC)
        with self._lock:
            self.last = run_pass(self.rt, now, self.via, users=users, tenant=tenant)
            return self.last

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="lifecycle-passes", daemon=True)
        self._thread.start()

    def join(self, timeout: float = 10.0) -> None:
        """Wait for the loop to end (it ends when ``rt.stop`` is set)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        interval = self.rt.settings.lifecycle_interval_s
        wait = min(interval, self.first_delay_s)
        while not self.rt.stop.wait(wait):
            wait = interval
            try:
                self.run()
            except Exception as exc:  # a failed pass is retried at the next tick
                log.error("lifecycle pass failed", extra={"fields": describe_error(exc)})
