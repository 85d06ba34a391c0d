"""Everything a flow step needs, built once per process from settings.

Steps are closures over one Runtime, so tests can hand a flow a runtime wired to the
test session's servers; the node hands the same object to the API so both share the
stores, the hot cache and the embedder. Building one is where a process's stores meet
its embedder, so it is also where a store made by another model refuses to start
(``sinks.store_model.check_store_model``; an API-only process checks in Services.build).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from core.settings import Settings
from sinks.hot_cache import HotCache
from sinks.keyring import KeyRing
from sinks.memory_store import MemoryStore
from sinks.store_model import check_store_model
from sinks.stores import Stores
from sinks.switches import SwitchStore
from sinks.tasks import TaskStore


@dataclass
class Runtime:
    settings: Settings
    stores: Stores
    memories: MemoryStore
    cache: HotCache
    tasks: TaskStore
    switches: SwitchStore
    embedder: Any
    llm: Any
    stop: threading.Event = field(default_factory=threading.Event)  # ends the flows (EOF)

    @classmethod
    def build(
        cls, settings: Settings, stores: Stores, embedder: Any = None, llm: Any = None
    ) -> Runtime:
        from models.factory import build_embedder, build_llm

        memories = MemoryStore(stores, KeyRing.from_settings(settings, stores.clickhouse))
        if settings.encryption_previous_keys.get_secret_value():
            memories.cipher.rewrap_all()  # a master-key rotation: re-wrap, no content touched
        embedder = embedder if embedder is not None else build_embedder(settings)
        check_store_model(memories, embedder, settings)  # ModelMismatch: refuse to start
        cache = HotCache.from_settings(memories, settings)
        return cls(
            settings=settings,
            stores=stores,
            memories=memories,
            cache=cache,
            tasks=TaskStore(stores.redis),
            switches=SwitchStore(stores.clickhouse, stores.redis),
            embedder=embedder,
            llm=llm if llm is not None else build_llm(settings),
        )
