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
        return self.get_many([user_id])[user_id]

    def get_many(self, user_ids: list[int]) -> dict[int, Switches]:
        """Switches of several users: one Redis pipeline, one ClickHouse query for misses."""
        users = list(dict.fromkeys(user_ids))
        try:
            pipe = self._redis.client.pipeline()
            for u in users:
                pipe.hgetall(_key(u))
            raws = dict(zip(users, pipe.execute(), strict=True))
        except redis.RedisError:
            raws = {u: {} for u in users}
        missing = [u for u, raw in raws.items() if _LOADED not in raw]
        if missing:
            raws.update(self._load(missing))
        return {u: _switches(raw) for u, raw in raws.items()}

    def _load(self, user_ids: list[int]) -> dict[int, dict[str, str]]:
        rows = self._ch.query(
            f"SELECT user_id, app_id, enabled FROM {self._ch.database}.memory_settings FINAL "
            "WHERE user_id IN {u:Array(UInt64)}",
            {"u": user_ids},
        )
        raws: dict[int, dict[str, str]] = {u: {_LOADED: "1"} for u in user_ids}
        for user_id, app, on in rows:
            raws[int(user_id)][app] = str(int(on))
        try:
            pipe = self._redis.client.pipeline()
            for u, raw in raws.items():
                pipe.hset(_key(u), mapping=raw)
            pipe.execute()
        except redis.RedisError:
            pass
        return raws

    def set(self, user_id: int, app_id: str | None, enabled: bool) -> None:
        """Durable first (ClickHouse), then the cache, so a crash never loses a switch-off."""
        app = app_id or ALL_APPS
        self._ch.insert(
            "memory_settings",
            [[user_id, app, int(enabled), datetime.now(UTC), time.time_ns()]],
            ["user_id", "app_id", "enabled", "updated_at", "version"],
        )
        self._load([user_id])


def _switches(raw: dict[str, str]) -> Switches:
    disabled = frozenset(
        app for app, on in raw.items() if app not in (_LOADED, ALL_APPS) and on == "0"
    )
    return Switches(global_enabled=raw.get(ALL_APPS, "1") != "0", disabled_apps=disabled)
