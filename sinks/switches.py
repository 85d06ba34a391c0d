"""Memory switches (docs/architecture.md#memory-switches): ClickHouse ``memory_settings`` is
the record, Redis the cache.

A user-level switch (app ``*``) and one per app, per (tenant, user). Reads hit Redis (one
HGETALL of ``switch:<user>``, scoped by the tenant); a miss loads the user's rows from
ClickHouse once and fills the cache.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import cast

import redis
from redis.typing import EncodableT, FieldT

from core.scope import Switches
from memstream.schemas.tenants import UserKey, scoped
from sinks.clickhouse import ClickHouseStore
from sinks.redis_store import RedisStore

ALL_APPS = "*"
_LOADED = "_loaded"


def _key(user: UserKey) -> str:
    return scoped(user.tenant, f"switch:{user.user_id}")


class SwitchStore:
    def __init__(self, clickhouse: ClickHouseStore, redis_store: RedisStore):
        self._ch = clickhouse
        self._redis = redis_store

    def get(self, user_id: int, *, tenant: str) -> Switches:
        key = UserKey(tenant, user_id)
        return self.get_many([key])[key]

    def get_many(self, keys: list[UserKey]) -> dict[UserKey, Switches]:
        """Switches of several users: one Redis pipeline, one ClickHouse query for misses."""
        users = [UserKey(*k) for k in dict.fromkeys(keys)]
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

    def _load(self, users: list[UserKey]) -> dict[UserKey, dict[str, str]]:
        raws: dict[UserKey, dict[str, str]] = {u: {_LOADED: "1"} for u in users}
        tenants: dict[str, list[int]] = {}
        for u in users:
            tenants.setdefault(u.tenant, []).append(u.user_id)
        for tenant, user_ids in tenants.items():
            rows = self._ch.query(
                f"SELECT user_id, app_id, enabled FROM {self._ch.database}.memory_settings "
                "FINAL WHERE tenant_id = {t:String} AND user_id IN {u:Array(UInt64)}",
                {"t": tenant, "u": user_ids},
            )
            for user_id, app, on in rows:
                raws[UserKey(tenant, int(user_id))][app] = str(int(on))
        try:
            pipe = self._redis.client.pipeline()
            for u, raw in raws.items():
                pipe.hset(_key(u), mapping=cast("dict[FieldT, EncodableT]", raw))
            pipe.execute()
        except redis.RedisError:
            pass
        return raws

    def set(self, user_id: int, app_id: str | None, enabled: bool, *, tenant: str) -> None:
        """Durable first (ClickHouse), then the cache, so a crash never loses a switch-off."""
        app = app_id or ALL_APPS
        self._ch.insert(
            "memory_settings",
            [[tenant, user_id, app, int(enabled), datetime.now(UTC), time.time_ns()]],
            ["tenant_id", "user_id", "app_id", "enabled", "updated_at", "version"],
        )
        self._load([UserKey(tenant, user_id)])


def _switches(raw: dict[str, str]) -> Switches:
    disabled = frozenset(
        app for app, on in raw.items() if app not in (_LOADED, ALL_APPS) and on == "0"
    )
    return Switches(global_enabled=raw.get(ALL_APPS, "1") != "0", disabled_apps=disabled)
