"""Provider ``openai``: any OpenAI-compatible ``/v1/chat/completions`` endpoint.

OpenAI, DeepSeek, Qwen, vLLM, Ollama and llama.cpp all speak it. JSON mode
(``response_format: json_object``) and temperature 0 keep answers parseable and stable;
HTTP retries and timeouts come from :class:`models.http.JsonHttp`.
"""

from __future__ import annotations

import httpx

from memstream.schemas.facts import ChatMessage
from models.errors import LLMTimeout, LLMUnavailable, MalformedOutput
from models.http import Failures, OpenAICompatible
from models.llm.base import PromptedLLM


class OpenAILLM(OpenAICompatible, PromptedLLM):
    """Chat completions with JSON output; 5xx/429/connection errors retried, timeouts not."""

    PATH = "chat/completions"
    FAILURES = Failures(LLMUnavailable, LLMTimeout, retry_timeouts=False)

    def __init__(
        self,
        base_url: str,
        *,
        model: str = "",
        api_key: str = "",
        timeout_s: float = 20.0,
        max_retries: int = 1,
        backoff_s: float = 0.5,
        json_mode: bool = True,
        client: httpx.Client | None = None,
    ) -> None:
        self._model = model
        self._json_mode = json_mode
        self._connect(base_url, api_key, timeout_s, max_retries, backoff_s, client)

    @property
    def name(self) -> str:
        return f"openai:{self._model or 'default'}"

    def _complete(self, messages: list[ChatMessage]) -> str:
        payload: dict[str, object] = {"messages": messages, "temperature": 0}
        if self._model:
            payload["model"] = self._model
        if self._json_mode:
            payload["response_format"] = {"type": "json_object"}
        body = self._http.post(payload)
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise MalformedOutput(f"{self._http.url}: no choices[0].message.content") from exc
        if not isinstance(content, str):
            raise MalformedOutput(f"{self._http.url}: message content is not text")
        return content
