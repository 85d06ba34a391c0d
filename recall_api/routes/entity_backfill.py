"""Admin endpoints of ``memstream entities backfill`` (docs/operations.md#entities-backfill),
loopback only and, once keys exist, with an admin key (``recall_api.routes.admin``).

``POST /admin/v1/entities/pending {tenant?, user_id?}`` answers the users whose ACTIVE or
ARCHIVED memories link no entity, with how many. ``POST /admin/v1/entities/backfill
{tenant?, user_id, batch?, after?}`` sends one page of those memories (oldest first) to
the user's keyed writer as an ``entities_backfill`` command and answers what it linked
and the cursor of the next page. The node reads its own store (the CLI cannot open an
embedded store the node holds); the writer re-reads each memory and links only one that
still has no links, so a page sent twice links nothing twice.

An admin key backfills its own tenant (another ``tenant`` answers 40101); local mode
(no keys) any tenant, every tenant when none is named.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Response

from recall_api.access import Caller
from recall_api.commands import run_command
from recall_api.deps import ServicesDep
from recall_api.errors import ApiError, ok
from recall_api.routes.admin import LoopbackOnly
from schemas.api import Envelope
from schemas.errors import ErrorCode
from schemas.payloads import ENTITIES_BACKFILL_OP, EntitiesBackfillPayload
from schemas.requests import EntitiesBackfillRequest, EntitiesPendingRequest
from schemas.responses import EntitiesBackfilled, EntitiesPending, PendingUser
from schemas.tenants import DEFAULT_TENANT
from sinks.entity_links import check_cursor, pending_ids, pending_users

router = APIRouter(prefix="/admin/v1", tags=["admin"])


def _tenant(caller: Caller, asked: str | None) -> str | None:
    """The tenant to read: the key's own (another answers 40101); in local mode the one
    asked, or None (every tenant)."""
    if caller.role is None:
        return asked
    if asked is not None and asked != caller.tenant:
        raise ApiError(
            ErrorCode.UNAUTHENTICATED, f"this key is the admin of tenant '{caller.tenant}' only"
        )
    return caller.tenant


@router.post("/entities/pending", response_model=Envelope[EntitiesPending])
async def pending(body: EntitiesPendingRequest, svc: ServicesDep, caller: LoopbackOnly) -> Response:
    """Users with memories stored before entities, and how many each."""
    tenant = _tenant(caller, body.tenant)
    found = await asyncio.to_thread(pending_users, svc.memories, tenant, body.user_id)
    users = [PendingUser(tenant_id=p.tenant, user_id=p.user_id, pending=p.memories) for p in found]
    return ok(EntitiesPending(users=users))


@router.post("/entities/backfill", response_model=Envelope[EntitiesBackfilled])
async def backfill(
    body: EntitiesBackfillRequest, svc: ServicesDep, caller: LoopbackOnly
) -> Response:
    """One page of one user's unlinked memories through the user's writer."""
    tenant = _tenant(caller, body.tenant) or DEFAULT_TENANT
    if body.after is not None and not check_cursor(body.after):
        raise ApiError(ErrorCode.BAD_PARAMETER, "after: not a cursor this endpoint answered")
    ids, cursor = await asyncio.to_thread(
        pending_ids, svc.memories, body.user_id, tenant=tenant, after=body.after, limit=body.batch
    )
    if not ids:
        return ok(EntitiesBackfilled(memories_seen=0, memories_linked=0, next=None))
    payload = EntitiesBackfillPayload(memory_ids=ids)
    data = await run_command(
        svc, ENTITIES_BACKFILL_OP, body.user_id, payload, tenant=tenant, caller=caller
    )
    done = EntitiesBackfilled.model_validate({**data, "next": cursor})
    return ok(done)
