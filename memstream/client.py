"""The Python client of the memstream HTTP API (DESIGN §6): ``Client`` and ``AsyncClient``.

Every endpoint is written once, in ``_Endpoints``: a method describes its call (path,
body, answer model) and hands it to ``_run``. ``Client._run`` sends it with httpx and
tenacity's ``Retrying``; ``AsyncClient._run`` with ``httpx.AsyncClient`` and
``AsyncRetrying``, so on an ``AsyncClient`` each method returns an awaitable of the same
model. Answers are the models of ``schemas.responses``; an envelope ``code`` other than 0
raises its exception (``memstream.errors``) carrying ``code``, ``trace_id`` and, for
writes, the ``request_id`` to resend. Retries and idempotency: ``memstream._transport``.

    from memstream import Client

    with Client("http://127.0.0.1:8000", api_key="msk_...") as memory:
        memory.add_structured(user_id=42, content="I am allergic to peanuts.")
        found = memory.recall(user_id=42, query="what food should I avoid?")
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Self

import httpx
from tenacity import AsyncRetrying, Retrying

from memstream._transport import (
    USER_AGENT,
    Call,
    RetryPolicy,
    answer_of,
    body_of,
    new_request_id,
    request_of,
    retry_options,
)
from memstream.errors import TransportError, error_for
from schemas.enums import Level, MemType, OpType, Ownership
from schemas.events import Message, Strategy
from schemas.responses import (
    AddAccepted,
    ChangeLogPage,
    Deleted,
    ExportStarted,
    ExportStatus,
    History,
    Purged,
    RecallResult,
    SessionClosed,
    StructuredAdded,
    Switched,
    TaskStatus,
    Updated,
    UserMemories,
)

DEFAULT_URL = "http://127.0.0.1:8000"
V1 = "/memory/v1"


def _task_failed(task: TaskStatus) -> None:
    """A failed add surfaces as the exception of its code (e.g. 50001 extraction failed)."""
    if task.status == "failed":
        raise error_for(task.code or 50000, f"task {task.task_id} failed: {task.reason or '?'}")


class _Endpoints:
    """Every endpoint of ``/memory/v1``, once, for both clients (see the module doc)."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        retry: RetryPolicy | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._headers = {"User-Agent": USER_AGENT}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    @classmethod
    def from_env(cls, **kwargs: Any) -> Self:
        """``MEMSTREAM_API_URL`` (default ``http://127.0.0.1:8000``), ``MEMSTREAM_API_KEY``
        and ``MEMSTREAM_API_TLS_CA_FILE`` (the CA to trust for https)."""
        kwargs.setdefault("api_key", os.environ.get("MEMSTREAM_API_KEY") or None)
        ca = os.environ.get("MEMSTREAM_API_TLS_CA_FILE")
        if ca:
            kwargs.setdefault("verify", ca)
        return cls(os.environ.get("MEMSTREAM_API_URL") or DEFAULT_URL, **kwargs)

    def _run(self, call: Call) -> Any:  # pragma: no cover - each client has its own
        raise NotImplementedError

    def _write(self, path: str, model: type, request_id: str | None, **fields: Any) -> Any:
        """A write: its idempotency key is fixed here, before the first attempt."""
        rid = request_id or new_request_id()
        body = body_of(**fields, request_id=rid)
        return self._run(Call("POST", f"{V1}/{path}", body, model, request_id=rid))

    def _read(self, path: str, model: type, **fields: Any) -> Any:
        return self._run(Call("POST", f"{V1}/{path}", body_of(**fields), model))

    # --- writes ---------------------------------------------------------------------

    def add(
        self,
        user_id: int,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        app_id: str | None = None,
        session_id: str | None = None,
        level: Level | str | None = None,
        ownership: Ownership | str | None = None,
        strategy: Strategy | Mapping[str, Any] | None = None,
        request_id: str | None = None,
    ) -> AddAccepted:
        """Hand over conversation turns for extraction; answers at once with a task id
        (``wait_task`` waits for it). ``messages``: ``{role, content, name?, msg_id?, ts?}``."""
        return self._write(
            "add",
            AddAccepted,
            request_id,
            user_id=user_id,
            app_id=app_id,
            session_id=session_id,
            level=level,
            ownership=ownership,
            messages=list(messages),
            strategy=strategy,
        )

    def add_structured(
        self,
        user_id: int,
        content: str,
        *,
        app_id: str | None = None,
        session_id: str | None = None,
        level: Level | str | None = None,
        ownership: Ownership | str | None = None,
        mem_type: MemType | str | None = None,
        is_important: bool | None = None,
        expire_at: datetime | None = None,
        custom_tags: Mapping[str, Any] | None = None,
        request_id: str | None = None,
    ) -> StructuredAdded:
        """Write one memory as given (no extraction, no evolution); answers once durable."""
        return self._write(
            "add_structured",
            StructuredAdded,
            request_id,
            user_id=user_id,
            content=content,
            app_id=app_id,
            session_id=session_id,
            level=level,
            ownership=ownership,
            mem_type=mem_type,
            is_important=is_important,
            expire_at=expire_at,
            custom_tags=custom_tags,
        )

    def update(
        self,
        user_id: int,
        memory_id: str,
        *,
        content: str | None = None,
        is_important: bool | None = None,
        expire_at: datetime | None = None,
        clear_expire_at: bool | None = None,
        custom_tags: Mapping[str, Any] | None = None,
        request_id: str | None = None,
    ) -> Updated:
        """Change content (re-embedded) and/or meta; give at least one of them."""
        return self._write(
            "update",
            Updated,
            request_id,
            user_id=user_id,
            memory_id=memory_id,
            content=content,
            is_important=is_important,
            expire_at=expire_at,
            clear_expire_at=clear_expire_at,
            custom_tags=custom_tags,
        )

    def delete(self, user_id: int, memory_id: str, *, request_id: str | None = None) -> Deleted:
        """Soft delete: out of recall when this returns, purged after the retention."""
        return self._write("delete", Deleted, request_id, user_id=user_id, memory_id=memory_id)

    def batch_delete(
        self,
        user_id: int,
        *,
        memory_ids: Sequence[str] | None = None,
        scope: Mapping[str, Any] | None = None,
        request_id: str | None = None,
    ) -> Deleted:
        """Delete the named ids, or everything of a ``scope`` (``{app_id?, level?,
        session_id?}``; ``{}`` is all the key may change); exactly one of the two."""
        return self._write(
            "batch_delete",
            Deleted,
            request_id,
            user_id=user_id,
            memory_ids=list(memory_ids) if memory_ids is not None else None,
            scope=dict(scope) if scope is not None else None,
        )

    def purge(
        self,
        user_id: int,
        *,
        scope: Mapping[str, Any] | None = None,
        request_id: str | None = None,
    ) -> Purged:
        """Everything of the user (crypto-shredded) or of a scope; admin keys only."""
        return self._write(
            "purge",
            Purged,
            request_id,
            user_id=user_id,
            scope=dict(scope) if scope is not None else None,
        )

    def switch(self, user_id: int, enabled: bool, *, app_id: str | None = None) -> Switched:
        """Memory on or off for the user (no ``app_id``: globally, admin keys only) or for
        one app. Setting a value twice is harmless, so it is retried like a read."""
        return self._read("switch", Switched, user_id=user_id, app_id=app_id, enabled=enabled)

    def session_close(
        self,
        user_id: int,
        session_id: str,
        *,
        app_id: str | None = None,
        promote_ids: Sequence[str] | None = None,
        pending: bool | None = None,
        request_id: str | None = None,
    ) -> SessionClosed:
        """Promote the session's valuable memories (and ``promote_ids``), drop the rest;
        ``pending`` keeps a 24 h continuity memory."""
        return self._write(
            "session/close",
            SessionClosed,
            request_id,
            user_id=user_id,
            session_id=session_id,
            app_id=app_id,
            promote_ids=list(promote_ids) if promote_ids is not None else None,
            pending=pending,
        )

    def export(self, user_id: int) -> ExportStarted:
        """Start an export of everything held about the user (admin keys only). Each call
        starts another, so it is retried on 429 (refused before it ran) but not on 503."""
        body = body_of(user_id=user_id)
        return self._run(Call("POST", f"{V1}/export", body, ExportStarted, idempotent=False))

    # --- reads ----------------------------------------------------------------------

    def recall(
        self,
        user_id: int,
        query: str,
        *,
        app_id: str | None = None,
        session_id: str | None = None,
        include_global: bool | None = None,
        cross_app: bool | None = None,
        ownership: Sequence[Ownership | str] | None = None,
        mem_type: Sequence[MemType | str] | None = None,
        custom_tags: Sequence[str] | None = None,
        top_k: int | None = None,
        min_relevance: float | None = None,
        include_archived: bool | None = None,
        timeout_ms: int | None = None,
        as_of: datetime | None = None,
    ) -> RecallResult:
        """The memories relevant to ``query`` that the scope allows, best first."""
        scope = {"app_id": app_id, "session_id": session_id, "include_global": include_global}
        if cross_app is not None:
            scope["cross_app"] = {"enabled": cross_app}
        filters = {"ownership": ownership, "mem_type": mem_type, "custom_tags": custom_tags}
        return self._read(
            "recall",
            RecallResult,
            user_id=user_id,
            query=query,
            scope=scope,
            filter={k: list(v) for k, v in filters.items() if v is not None},
            top_k=top_k,
            min_relevance=min_relevance,
            include_archived=include_archived,
            timeout_ms=timeout_ms,
            as_of=as_of,
        )

    def history(self, user_id: int, memory_id: str) -> History:
        """The memory, the chain of what it superseded and what superseded it, its changes."""
        return self._read("history", History, user_id=user_id, memory_id=memory_id)

    def change_log(
        self,
        user_id: int,
        *,
        app_id: str | None = None,
        level: Level | str | None = None,
        op_types: Sequence[OpType | str] | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> ChangeLogPage:
        """One page of the user's changes, newest first."""
        return self._read(
            "change_log",
            ChangeLogPage,
            user_id=user_id,
            app_id=app_id,
            level=level,
            op_types=list(op_types) if op_types is not None else None,
            start=start,
            end=end,
            page=page,
            page_size=page_size,
        )

    def user_list(
        self,
        user_id: int,
        *,
        include_deleted: bool | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> UserMemories:
        """One page of all the user's memories (history included), grouped by scope."""
        return self._read(
            "user/list",
            UserMemories,
            user_id=user_id,
            include_deleted=include_deleted,
            page=page,
            page_size=page_size,
        )

    def task(self, task_id: str) -> TaskStatus:
        """The status of an ``add``."""
        return self._run(Call("GET", f"{V1}/tasks/{task_id}", None, TaskStatus))

    def wait_task(
        self, task_id: str, *, timeout_s: float = 60.0, every_s: float = 0.2
    ) -> TaskStatus:
        """Poll ``tasks/{task_id}`` until the add is applied: its status when ``done``;
        a failed add raises its code's exception; ``TaskPending`` after ``timeout_s``."""
        return self._run(
            Call(
                "GET",
                f"{V1}/tasks/{task_id}",
                None,
                TaskStatus,
                until=lambda t: t.settled,
                poll_s=timeout_s,
                poll_every_s=every_s,
                check=_task_failed,
            )
        )

    def export_status(self, export_id: str, *, link_ttl_s: int | None = None) -> ExportStatus:
        """An export's state; once ``done`` it carries a signed download ``url``."""
        path = f"{V1}/export/{export_id}"
        if link_ttl_s is not None:
            path += f"?link_ttl_s={int(link_ttl_s)}"
        return self._run(Call("GET", path, None, ExportStatus))

    def wait_export(
        self, export_id: str, *, timeout_s: float = 60.0, every_s: float = 0.2
    ) -> ExportStatus:
        """Poll ``export_status`` until the export is no longer running."""
        return self._run(
            Call(
                "GET",
                f"{V1}/export/{export_id}",
                None,
                ExportStatus,
                until=lambda x: x.status != "running",
                poll_s=timeout_s,
                poll_every_s=every_s,
            )
        )

    def download_export(self, url: str) -> list[dict[str, Any]]:
        """The lines of a finished export (``ExportStatus.url``, a signed link)."""
        return self._run(Call("GET", url, None, "ndjson"))


class Client(_Endpoints):
    """The synchronous client. ``http``: an ``httpx.Client`` of your own (its base URL
    is then yours to set); ``verify``: httpx's (a CA file path for https)."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        verify: str | bool = True,
        http: httpx.Client | None = None,
    ):
        super().__init__(base_url, api_key, retry=retry)
        self._http = http or httpx.Client(base_url=self.base_url, timeout=timeout, verify=verify)

    def _run(self, call: Call) -> Any:
        return Retrying(**retry_options(self.retry, call))(self._once, call)

    def _once(self, call: Call) -> Any:
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


class AsyncClient(_Endpoints):
    """The asyncio client: the methods of ``Client``, each returning an awaitable of the
    same answer (``await memory.recall(...)``)."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        verify: str | bool = True,
        http: httpx.AsyncClient | None = None,
    ):
        super().__init__(base_url, api_key, retry=retry)
        self._http = http or httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout, verify=verify
        )

    def _run(self, call: Call) -> Any:
        return AsyncRetrying(**retry_options(self.retry, call))(self._once, call)

    async def _once(self, call: Call) -> Any:
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
