"""The response envelope every HTTP endpoint answers with (docs/api.md#the-envelope), and
health."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


class Envelope(BaseModel, Generic[T]):
    """``{code, msg, trace_id, data}``; ``code`` 0 is ok. Every refusal and error, and
    recall's answer, carry the request's ``trace_id``; the other success answers leave it
    out (it is in the ``x-trace-id`` header of every answer)."""

    code: int = 0
    msg: str = "ok"
    trace_id: str = ""
    data: T | None = None


class Health(BaseModel):
    """``/healthz`` (``status`` only) and ``/readyz`` (each store's check, how long the
    checks took; 503 when one fails)."""

    status: str
    checks: dict[str, Any] = {}
    took_ms: float | None = None
