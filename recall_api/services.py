"""What the API needs, handed over by whoever owns the process (the node or a test)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.settings import Settings
from sinks.changelog import ChangeLog
from sinks.hot_cache import HotCache
from sinks.memory_store import MemoryStore
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

    @property
    def changelog(self) -> ChangeLog:
        return ChangeLog(self.stores.clickhouse, self.memories.cipher)
