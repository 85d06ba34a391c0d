"""The stores and the embedder a process serves from, and the one way to open them.

:func:`open_services` is how every process starts (the node, the API, each flow, the
lifecycle command, reembed, the benches): it connects the stores the caller asks for,
follows ``memory.config`` while the embedding model loads, opens the keyring (re-wrapping
the data keys after a master-key rotation where asked), refuses a store whose vectors
another embedding model made (``sinks.store_model.check_store_model``) and, on the way
out or on any failure, closes all of it in the reverse order. Each caller chooses what
it opens: reembed opens ClickHouse and Milvus only, at the new model's dimension, with
no model check (docs/operations.md#changing-the-embedding-model).

The dataflows' ``Runtime`` holds one of these with the LLM and the flows' stop event
(``dataflows.runtime``), and the node's API serves from that same container, so the
flows and the API share the stores, the hot cache and the embedder.

The embedder is given, not built here: models and sinks are one floor
(docs/architecture.md#code-layout), so the caller (``recall_api.main``, ``dataflows.runtime``)
passes a loader, called once the live config is being read.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Protocol

from core.seams import EmbedderLike
from core.settings import Settings
from sinks.changelog import ChangeLog
from sinks.config_topic import ConfigFollower, SettingsHolder, follow_config
from sinks.hot_cache import HotCache
from sinks.keyring import KeyRing
from sinks.memory_store import MemoryStore
from sinks.store_model import check_store_model
from sinks.stores import Stores
from sinks.switches import SwitchStore
from sinks.tasks import TaskStore

log = logging.getLogger(__name__)

ALL_STORES = ("clickhouse", "milvus", "redis", "kafka")  # the order they connect in


@dataclass
class Services:
    settings: Settings
    stores: Stores
    memories: MemoryStore
    cache: HotCache
    tasks: TaskStore
    switches: SwitchStore
    embedder: EmbedderLike
    config: ConfigFollower | None = None  # keeps ``settings`` live; None: not followed

    @classmethod
    def build(
        cls, settings: Settings, stores: Stores, embedder: EmbedderLike, *, rewrap: bool = False
    ) -> Services:
        """The stores of ``settings`` with ``embedder``. ``rewrap``: after a master-key
        rotation, re-wrap the data keys (no content touched; the writing process does it).
        Raises ModelMismatch when another embedding model made the store's vectors."""
        memories = cls.memory_store(settings, stores, rewrap=rewrap)
        check_store_model(memories, embedder, settings)  # ModelMismatch: refuse to start
        return cls.around(settings, stores, memories, embedder)

    @staticmethod
    def memory_store(settings: Settings, stores: Stores, *, rewrap: bool = False) -> MemoryStore:
        """The memories with the keyring of ``settings`` (``rewrap``: see :meth:`build`)."""
        memories = MemoryStore(stores, KeyRing.from_settings(settings, stores.clickhouse))
        if rewrap and settings.encryption_previous_keys.get_secret_value():
            memories.cipher.rewrap_all()
        return memories

    @classmethod
    def around(
        cls,
        settings: Settings,
        stores: Stores,
        memories: MemoryStore,
        embedder: EmbedderLike,
        *,
        redis: bool = True,
    ) -> Services:
        """The parts over ``memories``; ``redis``: False where Redis is not opened (the
        hot cache then keeps no Redis snapshots)."""
        if redis:
            cache = HotCache.from_settings(memories, settings)
        else:
            cache = HotCache.attach(
                memories,
                settings.embedding_dim,
                settings.hot_cache_budget_mb,
                settings.hot_cache_max_loads,
                None,
                settings,
            )
        return cls(
            settings=settings,
            stores=stores,
            memories=memories,
            cache=cache,
            tasks=TaskStore(stores.redis),
            switches=SwitchStore(stores.clickhouse, stores.redis),
            embedder=embedder,
        )

    def keep_live(self, *holders: SettingsHolder) -> None:
        """Give ``holders`` (the app state) this process's live settings, now and at
        every ``memory.config`` change; nothing where the config is not followed."""
        if self.config is not None:
            self.config.attach(*holders)

    @property
    def changelog(self) -> ChangeLog:
        return ChangeLog(self.stores.clickhouse, self.memories.cipher)


@contextlib.contextmanager
def open_services(
    settings: Settings,
    embedder: Callable[[], EmbedderLike],
    *,
    stores: Collection[str] = ALL_STORES,
    topics: bool = False,
    follow: bool = True,
    ready_s: float = 2.0,
    rewrap: bool = False,
    check_model: bool = True,
    vector_dim: int | None = None,
) -> Iterator[Services]:
    """The process's Services while the block runs; everything closed in reverse after.

    ``embedder`` loads the model (called once the stores are open and the config is
    being read). ``stores``: which to connect (reembed: ClickHouse and Milvus). ``topics``:
    create Kafka's topics first (StoreUnavailable when Kafka does not answer; the node
    retries in the background instead). ``follow``: keep the settings live from
    ``memory.config``, waiting up to ``ready_s`` for its records before going on (the
    live values before the first input or request; Kafka may be down). ``rewrap``: see
    :meth:`Services.build`. ``check_model``: refuse another model's store (ModelMismatch).
    ``vector_dim``: a missing Milvus collection is created at this dimension.
    """
    unknown = set(stores) - set(ALL_STORES)
    if unknown:
        raise ValueError(f"open_services: unknown stores {sorted(unknown)}")
    opened = Stores.from_settings(settings)
    if vector_dim is not None:
        opened.milvus.dim = vector_dim
    with contextlib.ExitStack() as on_exit:
        for name in (n for n in ALL_STORES if n in stores):
            store = getattr(opened, name)
            store.setup()
            on_exit.callback(_close, name, store)
        if topics:
            opened.kafka.ensure_topics()
        config = None
        if follow:  # read while the model loads; applied without restart
            config = follow_config(opened.kafka, settings)
            on_exit.callback(config.stop)
        model = embedder()
        if check_model:
            services = Services.build(settings, opened, model, rewrap=rewrap)
        else:
            memories = Services.memory_store(settings, opened, rewrap=rewrap)
            services = Services.around(settings, opened, memories, model, redis="redis" in stores)
        if config is not None:
            services.config = config
            config.attach(services)
            config.ready.wait(ready_s)
        yield services


class _Closeable(Protocol):
    def close(self) -> None: ...


def _close(name: str, store: _Closeable) -> None:
    try:
        store.close()
    except Exception:
        log.warning("close failed", extra={"fields": {"store": name}}, exc_info=True)
