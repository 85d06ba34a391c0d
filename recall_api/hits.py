"""Recall hit events: ``{user_id, memory_ids, at}`` to ``memory.recall_hits``
(docs/architecture.md#kafka-topics).

The lifecycle flow turns them into weight recovery and ``last_recalled_at``.
:meth:`HitPublisher.submit` hands the event to one background thread and returns at
once; that thread only puts it on librdkafka's local queue. Not a FastAPI background
task on purpose: the response is not finished until the background tasks ran (behind
the Starlette ``BaseHTTPMiddleware`` the app used to have, +3 ms per recall), and the
work would sit on the event loop every request shares. A full queue or a dead broker
loses the hit (logged and counted) rather than failing anything — a missed recovery
step is harmless, a blocked recall is not.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from prometheus_client import Counter

from memstream.schemas.events import TOPIC_RECALL_HITS, RecallHits
from memstream.schemas.tenants import DEFAULT_TENANT
from sinks.kafka import KafkaBus

log = logging.getLogger(__name__)

HITS = Counter("memstream_recall_hit_events_total", "recall hit events", ["outcome"])


class HitPublisher:
    def __init__(self, bus: KafkaBus) -> None:
        self.bus = bus
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="recall-hits")

    def submit(self, user_id: int, memory_ids: Sequence[str], tenant: str) -> None:
        """Publish later, off the caller's thread; never raises, never blocks."""
        if memory_ids:
            self._thread.submit(self.publish, user_id, list(memory_ids), datetime.now(UTC), tenant)

    def publish(
        self,
        user_id: int,
        memory_ids: Sequence[str],
        at: datetime | None = None,
        tenant: str = DEFAULT_TENANT,
    ) -> None:
        if not memory_ids:
            return
        event = RecallHits(
            user_id=user_id,
            memory_ids=list(memory_ids),
            at=at or datetime.now(UTC),
            tenant_id=tenant,
        )
        try:
            self.bus.produce_json(
                self.bus.topic(TOPIC_RECALL_HITS), str(user_id), event.model_dump(mode="json")
            )
        except Exception as exc:  # a hit is best-effort by design; never surface it
            HITS.labels("dropped").inc()
            log.warning("recall hit not published", extra={"fields": {"error": str(exc)[:200]}})
            return
        HITS.labels("queued").inc()
