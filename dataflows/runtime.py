"""Everything a flow step needs: the process's Services plus the LLM and the stop event.

Steps are closures over one Runtime, so tests can hand a flow a runtime wired to the
test session's servers; the node hands the same parts to the API (``Services.shared``)
so both share the stores, the hot cache and the embedder. Building one re-wraps the data
keys after a master-key rotation and refuses a store made by another embedding model
(``sinks.services.Services.build``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.seams import EmbedderLike
from core.settings import Settings
from sinks.services import Services
from sinks.stores import Stores

if TYPE_CHECKING:
    from models.llm.base import LLMLike


@dataclass
class Runtime(Services):
    # set by ``build``; the dataclass needs a default after the base's fields
    llm: LLMLike = None  # type: ignore[assignment]
    stop: threading.Event = field(default_factory=threading.Event)  # ends the flows (EOF)

    @classmethod
    def build(  # type: ignore[override]
        cls,
        settings: Settings,
        stores: Stores,
        embedder: EmbedderLike | None = None,
        llm: LLMLike | None = None,
    ) -> Runtime:
        from models.factory import build_embedder, build_llm

        embedder = embedder if embedder is not None else build_embedder(settings)
        base = Services.build(settings, stores, embedder, rewrap=True)
        return cls(**base.parts(), llm=llm if llm is not None else build_llm(settings))
