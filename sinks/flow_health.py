"""Crash loops made visible (docs/operations.md#crash-loops).

A flow that restarts ``LOOP_RESTARTS`` times within ``LOOP_WINDOW_S`` is crash-looping:
its inputs are read again and again and nothing new is stored, for every tenant. The
runner notes each restart here; the restarts are published to the metric
``memstream_flow_restarts_total{flow}`` and ``memstream_flow_crash_looping{flow}``, and to
Redis (a sorted set of restart times per flow), where every process reads them: the
API's ``GET /healthz/ingest`` (503 while looping) and ``add`` (50301 while its flow
loops), and ``memstream status``. Redis here only *shows* the state; nothing the flow
needs to recover lives in it. Redis being down hides a loop from other processes, never
invents one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

import redis

from core.metrics import FLOW_CRASH_LOOPING as LOOPING
from core.metrics import FLOW_RESTARTS as RESTARTS
from sinks.errors import StoreError

log = logging.getLogger(__name__)

LOOP_RESTARTS = 3
LOOP_WINDOW_S = 300.0


def restarts_key(flow: str) -> str:
    return f"flow:{flow}:restarts"


class RestartLog:
    """One flow's recent restarts, kept in the process and published to Redis."""

    def __init__(self, flow: str, client: redis.Redis | None = None):
        self.flow = flow
        self._client = client
        self._times: deque[float] = deque()
        self._lock = threading.Lock()
        LOOPING.labels(flow).set(0)

    def restarted(self) -> None:
        now = time.time()
        with self._lock:
            self._times.append(now)
            self._trim(now)
            looping = len(self._times) >= LOOP_RESTARTS
        RESTARTS.labels(self.flow).inc()
        LOOPING.labels(self.flow).set(1 if looping else 0)
        if self._client is None:
            return
        try:
            key = restarts_key(self.flow)
            pipe = self._client.pipeline()
            pipe.zadd(key, {f"{now:.6f}": now})
            pipe.zremrangebyscore(key, "-inf", now - LOOP_WINDOW_S)
            pipe.expire(key, int(LOOP_WINDOW_S) + 60)
            pipe.execute()
        except (redis.RedisError, StoreError, OSError) as exc:
            log.warning("restart not published", extra={"fields": {"error": type(exc).__name__}})

    def looping(self) -> bool:
        now = time.time()
        with self._lock:
            self._trim(now)
            looping = len(self._times) >= LOOP_RESTARTS
        LOOPING.labels(self.flow).set(1 if looping else 0)
        return looping

    def _trim(self, now: float) -> None:
        while self._times and self._times[0] < now - LOOP_WINDOW_S:
            self._times.popleft()


def recent_restarts(client: redis.Redis, flow: str, now: float | None = None) -> int:
    """How many times ``flow`` restarted in the last ``LOOP_WINDOW_S``, in any process."""
    now = time.time() if now is None else now
    return int(client.zcount(restarts_key(flow), now - LOOP_WINDOW_S, "+inf"))


class LoopWatch:
    """Whether a flow is crash-looping, read from Redis at most once per ``ttl_s`` (the
    ``add`` route asks on every call). Unknown (Redis down) reads as not looping."""

    def __init__(self, client: Callable[[], redis.Redis], flow: str = "ingest", ttl_s: float = 1.0):
        self._client = client  # asked on each read: the API may start before Redis answers
        self.flow = flow
        self._ttl = ttl_s
        self._at = 0.0
        self._count = 0
        self._lock = threading.Lock()

    def restarts(self) -> int:
        now = time.monotonic()
        with self._lock:
            if now - self._at < self._ttl:
                return self._count
            self._at = now
        try:
            count = recent_restarts(self._client(), self.flow)
        except (redis.RedisError, StoreError, OSError):
            count = 0
        with self._lock:
            self._count = count
        return count

    def looping(self) -> bool:
        return self.restarts() >= LOOP_RESTARTS
