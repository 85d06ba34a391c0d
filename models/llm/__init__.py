"""The LLM interface (extract facts, decide evolution); one module per provider."""

from models.llm.base import LLM, PromptedLLM

__all__ = ["LLM", "PromptedLLM"]
