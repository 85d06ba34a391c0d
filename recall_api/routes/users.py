"""``users/resolve``: an external user id to memstream's ``user_id`` (docs/api.md#usersresolve)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from memstream.schemas.api import Envelope
from memstream.schemas.users import ResolvedUser, ResolveUserRequest
from recall_api import users
from recall_api.deps import CallerDep, ServicesDep
from recall_api.errors import ok

router = APIRouter(prefix="/memory/v1", tags=["users"])


@router.post("/users/resolve", response_model=Envelope[ResolvedUser])
async def resolve(body: ResolveUserRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """The caller's tenant's user for ``external_id``, created on first use (``created``
    true for that one call), or with ``create`` false only looked up (40401 when
    unknown); any key of the tenant may resolve."""
    if not body.create:
        found = await users.existing(svc, caller, body.external_id)
        return ok(ResolvedUser(user_id=found, created=False))
    return ok(await users.resolve(svc, caller, body.external_id))
