"""Dependencies declared once: the app's container, its services and recaller, and the
caller's identity."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request
from starlette.concurrency import run_in_threadpool

from memstream.schemas.errors import ErrorCode
from recall_api.access import Caller
from recall_api.errors import ApiError
from recall_api.ratelimit import kind_of
from recall_api.recall import Recaller
from recall_api.routing import ROUTE_HEADER, check_route
from recall_api.state import ApiState, api_state
from sinks.services import Services


def _api(request: Request) -> ApiState:
    return api_state(request.app)


ApiDep = Annotated[ApiState, Depends(_api)]


def _services(api: ApiDep) -> Services:
    if api.services is None:  # only health and admin routes are mounted without them
        raise ApiError(ErrorCode.UNAVAILABLE, "this process serves no memories")
    return api.services


ServicesDep = Annotated[Services, Depends(_services)]


def _recaller(api: ApiDep) -> Recaller:
    if api.recaller is None:
        raise ApiError(ErrorCode.UNAVAILABLE, "this process serves no memories")
    return api.recaller


RecallerDep = Annotated[Recaller, Depends(_recaller)]


def caller_of(request: Request) -> Caller:
    ring = api_state(request.app).keys.ring
    if ring.empty:
        return Caller.local()  # no key configured: the node listens on loopback only
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    rec = ring.verify(token.strip()) if scheme.lower() == "bearer" and token else None
    if rec is None:
        raise ApiError(ErrorCode.UNAUTHENTICATED, "missing, unknown or revoked API key")
    caller = Caller.of(rec)
    request.state.caller = caller
    return caller


async def _body_user(request: Request) -> int | None:
    """The body's ``user_id`` (already read and cached by FastAPI), if it is one."""
    if request.method != "POST":
        return None
    try:
        value = (await request.json()).get("user_id")
    except Exception:  # not JSON / not an object: the endpoint answers 40001 itself
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


RouteHeader = Annotated[
    str | None,
    Header(
        alias=ROUTE_HEADER,
        description="The body's user_id, for a load balancer to hash on (optional; "
        "another user's id is refused with 40001)",
    ),
]


async def limited_caller(
    request: Request, caller: Annotated[Caller, Depends(caller_of)], route: RouteHeader = None
) -> Caller:
    """The caller, its routing header checked against the body's user (40001,
    ``recall_api.routing``), counted against its key's and its user's rate limits (42910)."""
    user = await _body_user(request) if caller.kid or route else None
    check_route(route, user)
    if caller.kid:
        limiter = api_state(request.app).rate_limits
        await run_in_threadpool(limiter.check, caller.kid, kind_of(request.url.path), user)
    return caller


CallerDep = Annotated[Caller, Depends(limited_caller)]
