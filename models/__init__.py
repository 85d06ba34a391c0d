"""Embedding and LLM adapters behind small interfaces, and the prompts.

Providers are chosen by settings (DESIGN §8): a local transformers embedder (default
all-MiniLM-L6-v2, offline) or an OpenAI-compatible endpoint; an OpenAI-compatible
chat LLM, a local transformers LM, or the deterministic ``rules`` provider when no
LLM is configured. Prompts are modules of their own, one per task.
"""
