"""Follow ``memory.changes`` so the caches of this process see other processes' writes.

In the embedded node the keyed writer shares the process with the API and updates the
hot caches directly (``MemoryStore.subscribe``). When the API runs apart from the
writers (the distributed deployment, or a second node on the same servers), its caches
learn of changes only from this topic: each event names its user, and that user's hot
index and cold records are dropped, to be reloaded from the stores on the next recall.

Every API process must see every event, so there is no consumer group: the follower
assigns itself all partitions at their end. Events written by this process's own
``MemoryStore`` (same ``origin``) are skipped: they are already applied, and dropping
the user would only cost a reload. Until the follower is live, and after it lost the
broker for a while, it cannot know what it missed, so it clears the caches.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TypedDict

from confluent_kafka import Consumer, KafkaError, TopicPartition

from core.kv_items import is_item_id
from core.logs import log_fields
from memstream.schemas.events import TOPIC_CHANGES
from memstream.schemas.json_types import JsonValue
from memstream.schemas.tenants import DEFAULT_TENANT, UserKey, check_tenant
from recall_api.state import ApiState
from sinks.change_events import REFRESH_OP
from sinks.hot_cache import HotCache
from sinks.kafka import KafkaBus

log = logging.getLogger(__name__)


class WeightFields(TypedDict):
    """A refresh event's weights (``sinks.change_events``), as ``HotCache.refresh`` patches
    them onto the held record, with the status and stored hash it checks first."""

    status: str
    content_hash: str
    weight: float
    weight_at: datetime
    last_recalled_at: datetime | None
    recall_count: int


Invalidate = Callable[[UserKey], None]
Refresh = Callable[[UserKey, str, WeightFields], bool]  # False: not held, reload the user


class ChangesFollower:
    """A daemon thread: ``start()``, ``stop()``; ``invalidated`` counts dropped users."""

    def __init__(
        self,
        bus: KafkaBus,
        own_origin: str,
        invalidate: Invalidate,
        clear: Callable[[], None],
        refresh: Refresh | None = None,
        *,
        stale_after_s: float = 10.0,
    ) -> None:
        self.bus = bus
        self.own_origin = own_origin
        self._invalidate = invalidate
        self._clear = clear
        self._refresh = refresh
        self.stale_after_s = stale_after_s
        self.invalidated = 0
        self.refreshed = 0
        self.skipped_own = 0
        self.live = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="changes-follower", daemon=True)

    def start(self) -> ChangesFollower:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _consumer(self) -> Consumer:
        return Consumer(
            self.bus.client_config(
                {
                    "group.id": f"memstream-changes-{uuid.uuid4().hex[:8]}",  # never committed
                    "enable.auto.commit": False,
                    "socket.timeout.ms": 5000,
                    # The broker answers a fetch as soon as one record is there (fetch.min.bytes
                    # 1): a shorter wait would not make an invalidation come sooner, only make
                    # an idle follower ask 20 times a second (docs/benchmarks.md#bench-idle)
                    "fetch.wait.max.ms": 500,
                }
            )
        )

    def _assign(self, consumer: Consumer) -> bool:
        name = self.bus.topic(TOPIC_CHANGES)
        meta = consumer.list_topics(name, timeout=5)
        topic = meta.topics.get(name)
        if topic is None or topic.error is not None or not topic.partitions:
            return False
        # Start at the end offsets as they are now; the caches are cleared right after.
        ends = []
        for p in topic.partitions:
            _, high = consumer.get_watermark_offsets(TopicPartition(name, p), timeout=5)
            ends.append(TopicPartition(name, p, high))
        consumer.assign(ends)
        return True

    def _run(self) -> None:
        consumer = self._consumer()
        try:
            while not self._stop.is_set():
                try:
                    if self._assign(consumer):
                        break
                except Exception as exc:  # broker not up yet: the node retries too
                    log.warning(
                        "memory.changes not reachable yet", extra=log_fields(error=str(exc))
                    )
                self._stop.wait(1.0)
            else:
                return
            self._clear()
            self.live.set()
            last_ok = time.monotonic()
            while not self._stop.is_set():
                msgs = consumer.consume(num_messages=500, timeout=0.2)
                now = time.monotonic()
                for msg in msgs:
                    if (err := msg.error()) is None:
                        self._apply(msg.value())
                    elif err.code() != KafkaError._PARTITION_EOF:
                        log.warning("memory.changes error", extra=log_fields(error=str(err)))
                reached = bool(msgs) or (
                    now - last_ok > self.stale_after_s / 2 and self._broker_ok(consumer)
                )
                if reached:
                    if now - last_ok > self.stale_after_s:  # it may have missed events
                        log.warning("memory.changes was out of reach; caches cleared")
                        self._clear()
                    last_ok = now
        finally:
            consumer.close()

    def _broker_ok(self, consumer: Consumer) -> bool:
        # An idle topic and a lost broker both give empty polls: ask the broker.
        try:
            consumer.list_topics(self.bus.topic(TOPIC_CHANGES), timeout=1)
            return True
        except Exception:
            return False

    def _apply(self, raw: bytes | None) -> None:
        try:
            event = json.loads(raw or b"")
            # an event without a tenant (written before tenants) is the default tenant's
            user = UserKey(
                check_tenant(event.get("tenant_id", DEFAULT_TENANT)), int(event["user_id"])
            )
        except (ValueError, KeyError, TypeError):
            log.warning("memory.changes event without a user_id skipped")
            return
        if event.get("origin") == self.own_origin:
            self.skipped_own += 1
            return
        if is_item_id(str(event.get("memory_id") or "")):
            return  # an item: no cache here holds one (items are read from the stores)
        if event.get("op") == REFRESH_OP and self._refresh is not None:
            try:
                fields = _weights(event["weights"])
                if self._refresh(user, str(event["memory_id"]), fields):
                    self.refreshed += 1
                    return
            except (ValueError, KeyError, TypeError):
                pass  # malformed weights: fall back to a reload
        self._invalidate(user)
        self.invalidated += 1


def _weights(raw: JsonValue) -> WeightFields:
    """The event's weights; ValueError, KeyError or TypeError when malformed (the
    follower then reloads the user)."""
    if not isinstance(raw, dict):
        raise TypeError("weights is not an object")
    last = raw.get("last_recalled_at")
    return {
        "status": str(raw["status"]),
        "content_hash": str(raw["content_hash"]),
        "weight": float(_number(raw["weight"])),
        "weight_at": datetime.fromisoformat(_text(raw["weight_at"])),
        "last_recalled_at": datetime.fromisoformat(_text(last)) if last else None,
        "recall_count": int(_number(raw["recall_count"])),
    }


def _number(value: JsonValue) -> int | float | str:
    """What ``float()``/``int()`` may read; TypeError otherwise, as they would raise."""
    if isinstance(value, int | float | str):
        return value
    raise TypeError(f"not a number: {type(value).__name__}")


def _text(value: JsonValue) -> str:
    if isinstance(value, str):
        return value
    raise TypeError(f"not an ISO 8601 text: {type(value).__name__}")


def follow_changes(api: ApiState, cache: HotCache, bus: KafkaBus, origin: str) -> ChangesFollower:
    """Start a follower that drops changed users from ``cache`` and the app's cold records."""
    cold = None if api.recaller is None else api.recaller.cold

    def invalidate(user: UserKey) -> None:
        cache.invalidate(user.user_id, tenant=user.tenant)
        if cold is not None:
            cold.invalidate(user.user_id, tenant=user.tenant)

    def clear() -> None:
        cache.clear()
        if cold is not None:
            cold.clear()

    def refresh(user: UserKey, memory_id: str, fields: WeightFields) -> bool:
        if cold is not None:  # rare (archive, as_of): no patching there
            cold.invalidate(user.user_id, tenant=user.tenant)
        return cache.refresh(user.user_id, memory_id, dict(fields), tenant=user.tenant)

    return ChangesFollower(bus, origin, invalidate, clear, refresh).start()
