"""What the API needs, handed over by whoever owns the process (the node or a test)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.settings import Settings
from sinks.changelog import ChangeLog
from sinks.hot_cache import HotCache
from sinks.keyring import KeyRing
from sinks.memory_store import MemoryStore
from sinks.store_model import check_store_model
from sinks.stores import Stores
from sinks.switches import SwitchStore
from sinks.tasks import TaskStore


@dataclass
class Services:
    settings: Settings
    stores: Stores
    memories: MemoryStore
    cache: HotCache
    tasks: TaskStore
    switches: SwitchStore
    embedder: Any

    @classmethod
    def build(cls, settings: Settings, stores: Stores, embedder: Any = None) -> Services:
        """What an API-only process needs (the node shares its Runtime's instead)."""
        from models.factory import build_embedder

        memories = MemoryStore(stores, KeyRing.from_settings(settings, stores.clickhouse))
        embedder = embedder if embedder is not None else build_embedder(settings)
        check_store_model(memories, embedder, settings)  # as Runtime.build: ModelMismatch
        cache = HotCache.from_settings(memories, settings)
        return cls(
            settings,
            stores,
            memories,
            cache,
            TaskStore(stores.redis),
            SwitchStore(stores.clickhouse, stores.redis),
            embedder,
        )

    @property
    def changelog(self) -> ChangeLog:
        return ChangeLog(self.stores.clickhouse, self.memories.cipher)
