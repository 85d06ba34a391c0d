"""The stores and the embedder a process serves from: one container for both processes.

Built once per process from settings (:meth:`Services.build`). The API takes it as it
is; the dataflows' ``Runtime`` is the same container with the LLM and the flows' stop
event added, and the node hands its API the runtime's own parts (:meth:`Services.shared`)
so the flows and the API share the stores, the hot cache and the embedder. Building one
is where a process's stores meet its embedder, so it is also where a store made by
another model refuses to start (``sinks.store_model.check_store_model``).

The embedder is given, not built here: models and sinks are one floor (DESIGN §2), so
the caller (``recall_api.main``, ``dataflows.runtime``) loads it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from core.seams import EmbedderLike
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
    embedder: EmbedderLike

    @classmethod
    def build(
        cls, settings: Settings, stores: Stores, embedder: EmbedderLike, *, rewrap: bool = False
    ) -> Services:
        """The stores of ``settings`` with ``embedder``. ``rewrap``: after a master-key
        rotation, re-wrap the data keys (no content touched; the writing process does it).
        Raises ModelMismatch when another embedding model made the store's vectors."""
        memories = MemoryStore(stores, KeyRing.from_settings(settings, stores.clickhouse))
        if rewrap and settings.encryption_previous_keys.get_secret_value():
            memories.cipher.rewrap_all()
        check_store_model(memories, embedder, settings)  # ModelMismatch: refuse to start
        return Services(
            settings=settings,
            stores=stores,
            memories=memories,
            cache=HotCache.from_settings(memories, settings),
            tasks=TaskStore(stores.redis),
            switches=SwitchStore(stores.clickhouse, stores.redis),
            embedder=embedder,
        )

    def shared(self, **changes: Any) -> Services:
        """A Services of these very parts, ``changes`` replaced (the node's API serves
        from its runtime's stores, cache and embedder)."""
        return Services(**{**self.parts(), **changes})

    def parts(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(Services)}

    @property
    def changelog(self) -> ChangeLog:
        return ChangeLog(self.stores.clickhouse, self.memories.cipher)
