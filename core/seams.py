"""What the stores, flows and API use of an embedder and of an LLM: one seam per role,
each a structural type.

These protocols are the only interface types of the two roles. They live in core
because sinks (the store-model check, re-embedding) and dataflows use them and may not
import models (docs/architecture.md#code-layout); the LLM's values are ``memstream.schemas.facts``.
``models.embedding.base.Embedder`` and ``models.llm.base.LLM`` implement them (they
subclass them, and add only shared behaviour: batching, the query cache, re-asks); a
test's stand-in satisfies them without subclassing anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Protocol

import numpy as np

from memstream.schemas.enums import Ownership
from memstream.schemas.events import Message, Strategy
from memstream.schemas.facts import Decision, Fact, SimilarLike


class QueryVectors(Protocol):
    """A thread-safe cache of query vectors by text (``models.embedding.base.QueryCache``)."""

    def get(self, text: str) -> np.ndarray | None: ...

    def put(self, text: str, vec: np.ndarray) -> None: ...


class EmbedderLike(Protocol):
    """Texts in, a float32 matrix of unit-norm rows out; safe to call from many threads."""

    @property
    def name(self) -> str:
        """Provider and model (the store records it: ``sinks.store_model``)."""
        ...

    @property
    def dim(self) -> int:
        """Vector size."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of stored texts in their order, shape (n, dim)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of recall questions (the model's query form), shape (n, dim)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One question's vector, shape (dim,)."""
        ...

    @property
    def query_cache(self) -> QueryVectors | None:
        """The cache ``embed_query`` answers from, which the recall API's query batcher
        shares (one cache, not two stacked); None: the embedder keeps none."""
        ...

    def close(self) -> None:
        """Release what the provider holds."""
        ...


class LLMLike(Protocol):
    """What the dataflows use of an LLM: extraction, the evolution decision, merging."""

    # Whether earlier turns given as context help extraction. A model reads them to
    # resolve "it" and "there"; the rules provider reads each turn alone, so the caller
    # need not send them (and its per-call dedup would otherwise hide a repeated fact).
    uses_context: bool

    @property
    def name(self) -> str:
        """Provider and model, for logs and the changelog's reason field."""
        ...

    def extract_facts(
        self,
        messages: Sequence[Message],
        ownership: Ownership | None,
        strategy: Strategy | None,
        today: date,
    ) -> list[Fact]:
        """Facts worth remembering, each traced to its turn; [] when there are none.

        ``ownership`` picks the variant: USER reads user turns, AGENT assistant turns,
        None (generic) both. System turns are never read.
        """
        ...

    def decide(self, new_fact: str | Fact, similar: Sequence[SimilarLike]) -> list[Decision]:
        """ADD/UPDATE/DELETE/NONE for one new fact against its most similar memories.

        ``similar`` holds ``(id, text[, score])``; ids in the answer are always among them.
        """
        ...

    def summarize(self, texts: Sequence[str], max_chars: int) -> str:
        """ONE memory saying what ``texts`` (memories in time order) say, shorter."""
        ...

    def summarize_profile(
        self, items: Sequence[str], max_chars: int
    ) -> list[tuple[str, list[int]]]:
        """The planned profile ``items`` (reading order) as fewer statements within
        ``max_chars``, each with the indices (from 0) of the items it restates; the
        caller checks it (``core.profile_summary``) and keeps the plan when refused."""
        ...

    def close(self) -> None:
        """Release what the provider holds."""
        ...
