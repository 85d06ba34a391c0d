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
from typing import Any, Generic, Self, TypeVar, cast, overload

from core.seams import EmbedderLike, LLMLike
from core.settings import Settings
from sinks.changelog import ChangeLog
from sinks.hot_cache import HotCache
from sinks.memory_store import MemoryStore
from sinks.services import Services, open_services
from sinks.stores import Stores
from sinks.switches import SwitchStore
from sinks.tasks import TaskStore

T = TypeVar("T")


class _Part(Generic[T]):
    """A Runtime attribute that reads and writes the held Services' part of the same
    name: one descriptor rather than a property and a setter a part, and no
    ``__getattr__``, so mypy sees each part's type. Setting a part Services only reads
    (``changelog``) fails there, as a property without a setter does."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, rt: None, owner: type) -> Self: ...
    @overload
    def __get__(self, rt: Runtime, owner: type) -> T: ...
    def __get__(self, rt: Runtime | None, owner: type) -> T | Self:
        return self if rt is None else cast(T, getattr(rt.services, self.name))

    def __set__(self, rt: Runtime, value: T) -> None:
        setattr(rt.services, self.name, value)


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

    # the parts of the held Services, read where the steps read them; a test swaps one
    # for a double by setting it on the runtime (the settings: the config follower)
    settings = _Part[Settings]()
    stores = _Part[Stores]()
    memories = _Part[MemoryStore]()
    cache = _Part[HotCache]()
    tasks = _Part[TaskStore]()
    switches = _Part[SwitchStore]()
    embedder = _Part[EmbedderLike]()
    changelog = _Part[ChangeLog]()


@contextlib.contextmanager
def open_runtime(
    settings: Settings,
    *,
    embedder: EmbedderLike | None = None,
    llm: LLMLike | None = None,
    topics: bool = False,
    follow: bool = True,
    ready_s: float = 2.0,
    check_model: bool = True,
) -> Iterator[Runtime]:
    """The Runtime of ``settings`` while the block runs, every store open (``topics``,
    ``follow``, ``ready_s``, ``check_model``: as ``open_services``); all of it closed in
    reverse after."""
    from models.factory import build_embedder, build_llm

    def load() -> EmbedderLike:
        return embedder if embedder is not None else build_embedder(settings)

    with open_services(
        settings,
        load,
        topics=topics,
        follow=follow,
        ready_s=ready_s,
        rewrap=True,
        check_model=check_model,
    ) as services:
        yield Runtime(services, llm if llm is not None else build_llm(settings))
