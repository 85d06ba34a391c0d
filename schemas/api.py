"""The response envelope every HTTP endpoint answers with (DESIGN §6)."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


class Envelope(BaseModel, Generic[T]):
    code: int = 0
    msg: str = "ok"
    trace_id: str = ""
    data: T | None = None


class Health(BaseModel):
    status: str
    checks: dict[str, Any] = {}
