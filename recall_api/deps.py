"""Dependencies declared once: services, settings and the caller's identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from recall_api.errors import ApiError
from recall_api.services import Services
from schemas.errors import ErrorCode


def _services(request: Request) -> Services:
    return request.app.state.services


ServicesDep = Annotated[Services, Depends(_services)]


@dataclass(frozen=True)
class Caller:
    tenant: str
    app_ids: frozenset[str] | None  # None = every app (local mode without keys)

    def check_app(self, app_id: str | None) -> None:
        if self.app_ids is not None and app_id is not None and app_id not in self.app_ids:
            raise ApiError(ErrorCode.UNAUTHENTICATED, f"this key may not use app_id '{app_id}'")


def _caller(request: Request) -> Caller:
    keys = request.app.state.settings.api_keys
    if not keys:
        return Caller("local", None)
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or token not in keys:
        raise ApiError(ErrorCode.UNAUTHENTICATED, "missing or unknown API key")
    binding = keys[token]
    apps = binding.get("app_ids")
    return Caller(str(binding.get("tenant", "")), frozenset(apps) if apps is not None else None)


CallerDep = Annotated[Caller, Depends(_caller)]
