"""Memory switches (DESIGN §7): ClickHouse ``memory_settings`` is the record, Redis the cache.

A user-level switch (app ``*``) and one per app. Reads hit Redis (one HGETALL); a miss
loads the user's rows from ClickHouse once and fills the cache.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import redis

from core.scope import Switches
from sinks.clickhouse import ClickHouseStore
from sinks.redis_store import RedisStore

ALL_APPS = "*"
_LOADED = "_loaded"


def _key(user_id: int) -> str:
    return f"switch:{user_id}"


class SwitchStore:
    def __init__(self, clickhouse: ClickHouseStore, redis_store: RedisStore):
        self._ch = clickhouse
        self._redis = redis_store

    def get(self, user_id: int) -> Switches:
        try:
            raw = self._redis.client.hgetall(_key(user_id))
        except redis.RedisError:
            raw = {}
        if _LOADED not in raw:
            raw = self._load(user_id)
        disabled = frozenset(
            app for app, on in raw.items() if app not in (_LOADED, ALL_APPS) and on == "0"
        )
        return Switches(global_enabled=raw.get(ALL_APPS, "1") != "0", disabled_apps=disabled)

    def _load(self, user_id: int) -> dict[str, str]:
        rows = self._ch.query(
            f"SELECT app_id, enabled FROM {self._ch.database}.memory_settings FINAL "
            "WHERE user_id = {u:UInt64}",
            {"u": user_id},
        )
        raw = {app: str(int(on)) for app, on in rows}
        raw[_LOADED] = "1"
        try:
            self._redis.client.hset(_key(user_id), mapping=raw)
        except redis.RedisError:
            pass
        return raw

    def set(self, user_id: int, app_id: str | None, enabled: bool) -> None:
        """Durable first (ClickHouse), then the cache, so a crash never loses a switch-off."""
        app = app_id or ALL_APPS
        self._ch.insert(
            "memory_settings",
            [[user_id, app, int(enabled), datetime.now(UTC), time.time_ns()]],
            ["user_id", "app_id", "enabled", "updated_at", "version"],
        )
        self._load(user_id)
