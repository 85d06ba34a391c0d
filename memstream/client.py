"""The Python client of the memstream HTTP API (docs/api.md#python-client): ``Client`` and
``AsyncClient``.

Every endpoint is written once, in ``memstream._writes`` and ``memstream._reads``: a
method describes its call (path, body, answer model) and hands it to ``_run``.
``Client._run`` sends it with httpx and tenacity's ``Retrying``; ``AsyncClient._run`` with
``httpx.AsyncClient`` and ``AsyncRetrying``, so on an ``AsyncClient`` each method returns
an awaitable of the same model. Answers are the models of ``memstream.schemas.responses``; an
envelope ``code`` other than 0 raises its exception (``memstream.errors``) carrying
``code``, ``trace_id`` and, for writes, the ``request_id`` to resend. Retries and
idempotency: ``memstream._transport``.

    from memstream import Client

    with Client("http://127.0.0.1:8000", api_key="msk_...") as memory:
        memory.add_structured(user_id=42, content="I am allergic to peanuts.")
        found = memory.recall(user_id=42, query="what food should I avoid?")
"""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Awaitable
from typing import Any, Generic, Self, TypeVar

import httpx
from tenacity import AsyncRetrying, Retrying

from memstream._reads import Reads
from memstream._transport import (
    USER_AGENT,
    Call,
    RetryPolicy,
    answer_of,
    request_of,
    retry_options,
)
from memstream._writes import Writes
from memstream.errors import TransportError

DEFAULT_URL = "http://127.0.0.1:8000"

H = TypeVar("H", httpx.Client, httpx.AsyncClient)
T = TypeVar("T")


class _Endpoints(Writes, Reads, Generic[H]):
    """Every endpoint of ``/memory/v1`` for both clients (see the module doc), and the
    one constructor of both: ``http`` is the caller's httpx client of the right kind,
    else ``_connect`` opens one."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        verify: str | bool = True,
        http: H | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._headers = {"User-Agent": USER_AGENT}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._http: H = http or self._connect(timeout, verify)

    @abstractmethod
    def _connect(self, timeout: float, verify: str | bool) -> H:
        """A client of this kind at ``base_url`` (the caller gave none)."""

    @classmethod
    def from_env(cls, **kwargs: Any) -> Self:
        """``MEMSTREAM_API_URL`` (default ``http://127.0.0.1:8000``), ``MEMSTREAM_API_KEY``
        and ``MEMSTREAM_API_TLS_CA_FILE`` (the CA to trust for https)."""
        kwargs.setdefault("api_key", os.environ.get("MEMSTREAM_API_KEY") or None)
        ca = os.environ.get("MEMSTREAM_API_TLS_CA_FILE")
        if ca:
            kwargs.setdefault("verify", ca)
        return cls(os.environ.get("MEMSTREAM_API_URL") or DEFAULT_URL, **kwargs)


class Client(_Endpoints[httpx.Client]):
    """The synchronous client. ``http``: an ``httpx.Client`` of your own (its base URL
    is then yours to set); ``verify``: httpx's (a CA file path for https)."""

    def _connect(self, timeout: float, verify: str | bool) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=timeout, verify=verify)

    def _run(self, call: Call[T]) -> T:
        return Retrying(**retry_options(self.retry, call))(self._once, call)

    def _once(self, call: Call[T]) -> T:
        try:
            resp = self._http.send(request_of(self._http, call, self._headers))
        except httpx.TransportError as exc:
            raise TransportError(f"{call.method} {call.path}: {exc!r}", call.request_id) from exc
        return answer_of(call, resp)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class AsyncClient(_Endpoints[httpx.AsyncClient]):
    """The asyncio client: the methods of ``Client``, each returning an awaitable of the
    same answer (``await memory.recall(...)``); ``http``: an ``httpx.AsyncClient``."""

    def _connect(self, timeout: float, verify: str | bool) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base_url, timeout=timeout, verify=verify)

    def _run(self, call: Call[T]) -> Awaitable[T]:
        return AsyncRetrying(**retry_options(self.retry, call))(self._once, call)

    async def _once(self, call: Call[T]) -> T:
        try:
            resp = await self._http.send(request_of(self._http, call, self._headers))
        except httpx.TransportError as exc:
            raise TransportError(f"{call.method} {call.path}: {exc!r}", call.request_id) from exc
        return answer_of(call, resp)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()
