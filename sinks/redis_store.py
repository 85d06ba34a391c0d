"""Redis: switches, counters, tombstones, task status, hot data
(docs/architecture.md#stores).

A cache, never the record: every key here can be rebuilt from ClickHouse. Short socket
timeouts keep a dead Redis from stalling a request; callers treat
:class:`StoreUnavailable` as "fall back to the durable store".
"""

from __future__ import annotations

import redis

from sinks.errors import StoreUnavailable


class RedisStore:
    def __init__(self, url: str, socket_timeout: float = 0.5):
        self.url = url
        self._timeout = socket_timeout
        self._client: redis.Redis | None = None
        self._raw: redis.Redis | None = None

    def setup(self) -> None:
        self._client = redis.Redis.from_url(
            self.url,
            socket_timeout=self._timeout,
            socket_connect_timeout=self._timeout,
            health_check_interval=30,
            decode_responses=True,
        )
        self._raw = redis.Redis.from_url(
            self.url,
            socket_timeout=self._timeout,
            socket_connect_timeout=self._timeout,
            health_check_interval=30,
        )

    @property
    def client(self) -> redis.Redis:
        if self._client is None:
            raise StoreUnavailable("redis: setup() was not called")
        return self._client

    @property
    def raw(self) -> redis.Redis:
        """A client that returns bytes (binary values: ``sinks.user_snapshot``)."""
        if self._raw is None:
            raise StoreUnavailable("redis: setup() was not called")
        return self._raw

    def ping(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.RedisError:
            return False

    def close(self) -> None:
        for client in (self._client, self._raw):
            if client is not None:
                client.close()
        self._client = self._raw = None
