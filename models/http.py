"""One JSON-over-HTTP client for the OpenAI-compatible providers (chat and embeddings).

Retries, timeouts and the mapping of transport failures to typed errors live here once,
so a provider only builds its payload and reads its answer. The httpx client is
injectable: tests pass their own transport, or point at a scripted local server.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx

from core.retry import retrying
from models.errors import MalformedOutput, ModelUnavailable

log = logging.getLogger(__name__)

_VERSIONED = re.compile(r"/v\d+[a-z0-9]*$")
_RETRY_STATUS = frozenset({408, 425, 429}) | frozenset(range(500, 600))
_MAX_PAUSE_S = 8.0


def endpoint_url(base_url: str, path: str) -> str:
    """``base`` + ``path``, adding ``/v1`` unless the base already ends in a version.

    Users paste either ``https://api.openai.com`` or ``https://api.openai.com/v1`` (or
    ``.../compatible-mode/v1``); both must reach ``.../v1/<path>``.
    """
    base = base_url.rstrip("/")
    if not _VERSIONED.search(base):
        base += "/v1"
    return f"{base}/{path.lstrip('/')}"


@dataclass(frozen=True, slots=True)
class Failures:
    """How one role's model fails: its error classes (an LLM failure reads as
    LLMUnavailable, an embedding failure as EmbeddingUnavailable), and whether a timeout
    is retried (an LLM that timed out once will usually time out again, and the caller's
    budget is spent)."""

    unavailable: type[ModelUnavailable]
    timeout: type[ModelUnavailable]
    retry_timeouts: bool = False


class JsonHttp:
    """POST JSON, get JSON; retry what is worth retrying, raise ``failures``' typed
    errors otherwise."""

    def __init__(
        self,
        url: str,
        failures: Failures,
        *,
        api_key: str = "",
        timeout_s: float,
        max_retries: int,
        backoff_s: float = 0.5,
        client: httpx.Client | None = None,
    ) -> None:
        self.url = url
        self._failures = failures
        self._timeout_s = timeout_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._owns_client = client is None
        self._client = client or httpx.Client(timeout=httpx.Timeout(timeout_s))
        self._retrying = retrying(
            attempts=max_retries + 1,
            backoff_s=backoff_s,
            max_wait_s=_MAX_PAUSE_S,
            retry_on=self._worth_retrying,
            hint=_hint,
            logger=log,
            message="model request failed, retrying",
            fields={"url": url},
        )

    def close(self) -> None:
        """Close the client this object made; an injected client belongs to its owner."""
        if self._owns_client:
            self._client.close()

    def post(self, payload: Mapping[str, object]) -> dict[str, Any]:
        """Send ``payload``; return the decoded JSON object of a 2xx answer."""
        return self._retrying(self._send, payload)

    def _send(self, payload: Mapping[str, object]) -> dict[str, Any]:
        """One attempt: the decoded answer, or the typed error (``_worth_retrying`` says
        whether the policy tries again)."""
        try:
            resp = self._client.post(
                self.url,
                json=payload,
                headers=self._headers,
                timeout=httpx.Timeout(self._timeout_s),
            )
        except httpx.TimeoutException as exc:
            raise self._failures.timeout(
                f"no answer from {self.url} within {self._timeout_s:g}s ({type(exc).__name__})"
            ) from exc
        except httpx.TransportError as exc:
            raise self._failures.unavailable(
                f"cannot reach {self.url}: {type(exc).__name__}: {exc}"
            ) from exc
        if resp.status_code >= 400:
            err = self._failures.unavailable(
                f"{self.url} answered HTTP {resp.status_code}{_error_kind(resp)}",
                status_code=resp.status_code,
            )
            err.retry_after_s = _retry_after(resp)
            raise err
        return self._decode(resp)

    def _worth_retrying(self, exc: BaseException) -> bool:
        """A refused connection, a retryable status (429, 5xx, ...), and a timeout only
        when ``failures.retry_timeouts``; never a malformed answer or another 4xx."""
        if not isinstance(exc, ModelUnavailable):
            return False
        if exc.status_code is not None:
            return exc.status_code in _RETRY_STATUS
        if isinstance(exc.__cause__, httpx.TimeoutException):
            return self._failures.retry_timeouts
        return True

    def _decode(self, resp: httpx.Response) -> dict[str, Any]:
        try:
            body = resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise MalformedOutput(
                f"{self.url} answered non-JSON ({len(resp.content)} bytes)"
            ) from exc
        if not isinstance(body, dict):
            raise MalformedOutput(f"{self.url} answered JSON that is not an object")
        return body


class OpenAICompatible:
    """What both OpenAI-compatible providers share: one :class:`JsonHttp` at the base
    URL plus the role's ``PATH``, failing with the role's ``FAILURES``, and ``close``."""

    PATH: ClassVar[str]
    FAILURES: ClassVar[Failures]
    _http: JsonHttp

    def _connect(
        self,
        base_url: str,
        api_key: str,
        timeout_s: float,
        max_retries: int,
        backoff_s: float,
        client: httpx.Client | None,
    ) -> None:
        self._http = JsonHttp(
            endpoint_url(base_url, self.PATH),
            self.FAILURES,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            client=client,
        )

    def close(self) -> None:
        self._http.close()


def _hint(exc: BaseException) -> float | None:
    return exc.retry_after_s if isinstance(exc, ModelUnavailable) else None


def _retry_after(resp: httpx.Response) -> float | None:
    """Seconds from a numeric Retry-After header (rate limits), if the server sent one."""
    value = resp.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _error_kind(resp: httpx.Response) -> str:
    """The error's type/code of an OpenAI-style error body, never its message: servers
    echo the prompt (memory content) in messages."""
    try:
        err = resp.json().get("error")
    except (ValueError, AttributeError):
        return ""
    if not isinstance(err, dict):
        return ""
    kinds = [str(err[k])[:64] for k in ("type", "code") if isinstance(err.get(k), str | int)]
    return f" ({', '.join(kinds)})" if kinds else ""
