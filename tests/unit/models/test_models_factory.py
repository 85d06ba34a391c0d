"""Settings pick the providers (docs/configuration.md#models)."""

from __future__ import annotations

import pytest

from core.settings import Settings
from models import build_embedder, build_llm
from models.embedding.openai_compat import OpenAIEmbedder
from models.errors import ModelConfigError
from models.llm.openai_compat import OpenAILLM
from models.llm.rules import RulesLLM


def test_rules_is_the_default_llm_and_uses_the_near_duplicate_setting():
    llm = build_llm(Settings(llm_provider="rules", near_duplicate_similarity=0.97))
    assert isinstance(llm, RulesLLM) and llm.near_duplicate_similarity == 0.97


def test_openai_llm_from_settings():
    llm = build_llm(
        Settings(
            llm_provider="openai",
            llm_base_url="http://127.0.0.1:9/v1",
            llm_model="qwen2.5",
            llm_timeout_s=3,
        )
    )
    assert isinstance(llm, OpenAILLM) and llm.name == "openai:qwen2.5"
    llm.close()


def test_transformers_llm_needs_a_model_path():
    with pytest.raises(ModelConfigError):
        build_llm(Settings(llm_provider="transformers"))


def test_openai_embedder_from_settings():
    emb = build_embedder(
        Settings(
            embedding_provider="openai",
            embedding_base_url="http://h:1",
            embedding_model="bge-m3",
            embedding_dim=1024,
        )
    )
    assert isinstance(emb, OpenAIEmbedder) and emb.dim == 1024
    emb.close()


def test_openai_embedder_needs_a_model_name():
    with pytest.raises(ModelConfigError):
        build_embedder(Settings(embedding_provider="openai", embedding_base_url="http://h:1"))
