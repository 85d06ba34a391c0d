"""Everything a flow step needs: the process's Services, the LLM and the stop event.

Steps are closures over one Runtime, so tests can hand a flow a runtime wired to the
test session's servers. A Runtime *holds* its Services (it does not extend them): the
node's API serves from ``rt.services``, the very container the flows use, so both share
the stores, the hot cache, the embedder and the live settings. :func:`open_runtime` is
``sinks.services.open_services`` plus the LLM: the data keys re-wrapped after a
master-key rotation, a store made by another embedding model refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from core.seams import EmbedderLike, LLMLike
from core.settings import Settings
from sinks.changelog import ChangeLog
from sinks.hot_cache import HotCache
from sinks.memory_store import MemoryStore
from sinks.services import Services, open_services
from sinks.stores import Stores
from sinks.switches import SwitchStore
from sinks.tasks import TaskStore


@dataclass(init=False)
class Runtime:
    services: Services
    llm: LLMLike
    stop: threading.Event  # ends the flows (EOF)

    def __init__(
        self,
        services: Services,
        llm: LLMLike,
        stop: threading.Event | None = None,
        **parts: Any,
    ) -> None:
        """``parts``: the held Services' parts replaced in a copy of them, so that
        ``dataclasses.replace(rt, tasks=...)`` gives a runtime over other tasks."""
        self.services = dataclasses.replace(services, **parts) if parts else services
        self.llm = llm
        self.stop = stop if stop is not None else threading.Event()

    @classmethod
    def build(
        cls,
        settings: Settings,
        stores: Stores,
        embedder: EmbedderLike | None = None,
        llm: LLMLike | None = None,
    ) -> Runtime:
        """A runtime over stores opened elsewhere (tests: the session's servers)."""
        from models.factory import build_embedder, build_llm

        embedder = embedder if embedder is not None else build_embedder(settings)
        services = Services.build(settings, stores, embedder, rewrap=True)
        return cls(services, llm if llm is not None else build_llm(settings))

    # the parts of the held Services, read where the steps read them
    @property
    def settings(self) -> Settings:
        return self.services.settings  # live: swapped by the config follower

    @settings.setter
    def settings(self, value: Settings) -> None:
        self.services.settings = value

    @property
    def stores(self) -> Stores:
        return self.services.stores

    @stores.setter
    def stores(self, value: Stores) -> None:  # a test swaps one part for a double
        self.services.stores = value

    @property
    def memories(self) -> MemoryStore:
        return self.services.memories

    @memories.setter
    def memories(self, value: MemoryStore) -> None:  # a test swaps one part for a double
        self.services.memories = value

    @property
    def cache(self) -> HotCache:
        return self.services.cache

    @cache.setter
    def cache(self, value: HotCache) -> None:  # a test swaps one part for a double
        self.services.cache = value

    @property
    def tasks(self) -> TaskStore:
        return self.services.tasks

    @tasks.setter
    def tasks(self, value: TaskStore) -> None:  # a test swaps one part for a double
        self.services.tasks = value

    @property
    def switches(self) -> SwitchStore:
        return self.services.switches

    @switches.setter
    def switches(self, value: SwitchStore) -> None:  # a test swaps one part for a double
        self.services.switches = value

    @property
    def embedder(self) -> EmbedderLike:
        return self.services.embedder

    @embedder.setter
    def embedder(self, value: EmbedderLike) -> None:  # a test swaps one part for a double
        self.services.embedder = value

    @property
    def changelog(self) -> ChangeLog:
        return self.services.changelog


@contextlib.contextmanager
def open_runtime(
    settings: Settings,
    *,
    embedder: EmbedderLike | None = None,
    llm: LLMLike | None = None,
    topics: bool = False,
    follow: bool = True,
    ready_s: float = 2.0,
) -> Iterator[Runtime]:
    """The Runtime of ``settings`` while the block runs, every store open (``topics``,
    ``follow``, ``ready_s``: as ``open_services``); all of it closed in reverse after."""
    from models.factory import build_embedder, build_llm

    def load() -> EmbedderLike:
        return embedder if embedder is not None else build_embedder(settings)

    with open_services(
        settings, load, topics=topics, follow=follow, ready_s=ready_s, rewrap=True
    ) as services:
        yield Runtime(services, llm if llm is not None else build_llm(settings))
