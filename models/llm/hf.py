"""Provider ``transformers``: a local causal LM from a directory (``llm_model``).

Same prompts and parsing as the HTTP provider; the chat template is used when the
tokenizer has one, else a plain "role: content" transcript. Greedy decoding, bounded by
``max_new_tokens`` and by ``llm_timeout_s`` (generation's own ``max_time``): running
out of time is an LLMTimeout, not a truncated answer passed off as valid.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import cast

from memstream.schemas.facts import ChatMessage
from models.errors import LLMTimeout, LLMUnavailable, ModelConfigError
from models.llm.base import PromptedLLM


class TransformersLLM(PromptedLLM):
    """One model per process; a lock serializes generation (one forward pass at a time)."""

    def __init__(self, model: str, *, timeout_s: float = 20.0, max_new_tokens: int = 512) -> None:
        if not model:
            raise ModelConfigError(
                "llm_model must name a local model directory when llm_provider is transformers"
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            self._tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=True)
            self._model = AutoModelForCausalLM.from_pretrained(model, local_files_only=True)
        except (OSError, ValueError, KeyError) as exc:
            raise ModelConfigError(f"LLM {model!r} cannot be loaded offline: {exc}") from exc
        self._model.eval()
        self._torch = torch
        self._path = model
        self._timeout_s = timeout_s
        self._max_new_tokens = max_new_tokens
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"transformers:{Path(self._path).name}"

    def _prompt(self, messages: list[ChatMessage]) -> tuple[str, bool]:
        """The text to continue, and whether it already carries the special tokens."""
        if getattr(self._tokenizer, "chat_template", None):
            text = self._tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
            return str(text), True
        lines = [f"{m['role']}: {m['content']}" for m in messages]
        return "\n\n".join([*lines, "assistant:"]), False

    def _complete(self, messages: list[ChatMessage]) -> str:
        text, templated = self._prompt(messages)
        tok = self._tokenizer
        enc = tok(text, return_tensors="pt", add_special_tokens=not templated)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        started = time.monotonic()
        with self._lock, self._torch.inference_mode():
            try:
                out = self._model.generate(
                    **enc,
                    max_new_tokens=self._max_new_tokens,
                    do_sample=False,
                    max_time=self._timeout_s,
                    pad_token_id=pad,
                )
            except (RuntimeError, ValueError, IndexError) as exc:
                raise LLMUnavailable(f"{self.name}: generation failed: {exc}") from exc
        if time.monotonic() - started >= self._timeout_s:
            raise LLMTimeout(f"{self.name}: no complete answer within {self._timeout_s:g}s")
        new_tokens = out[0, enc["input_ids"].shape[1] :]
        # one sequence decodes to one str (the stubs answer str | list[str] for a batch too)
        return cast(str, tok.decode(new_tokens, skip_special_tokens=True))
