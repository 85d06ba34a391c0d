"""Admin endpoints of ``memstream entities backfill`` (docs/operations.md#entities-backfill),
loopback only and, once keys exist, with an admin key (``recall_api.routes.admin``).

``POST /admin/v1/entities/pending {tenant?, user_id?, rescan?}`` answers the users whose
ACTIVE or ARCHIVED memories the backfill has still to read, with how many: those that
link no entity, were created before the store extracted entities at ingest, and lie past
where the backfill last read the user (``sinks.entity_links``; ``rescan``: every one that
links no entity). ``POST /admin/v1/entities/backfill {tenant?, user_id, batch?, after?,
rescan?}`` sends one page of those memories (oldest first) to the user's keyed writer as
an ``entities_backfill`` command, records how far the user is read once the writer
answered, and answers what it linked and the cursor of the next page. The node reads its
own store (the CLI cannot open an embedded store the node holds); the writer re-reads
each memory and links only one that still has no links, so a page sent twice links
nothing twice.

An admin key backfills its own tenant (another ``tenant`` answers 40101); local mode
(no keys) any tenant, every tenant when none is named.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Response

from memstream.schemas.api import Envelope
from memstream.schemas.errors import ErrorCode
from memstream.schemas.payloads import ENTITIES_BACKFILL_OP, EntitiesBackfillPayload
from memstream.schemas.requests import EntitiesBackfillRequest, EntitiesPendingRequest
from memstream.schemas.responses import EntitiesBackfilled, EntitiesPending, PendingUser
from memstream.schemas.tenants import DEFAULT_TENANT
from recall_api.access import Caller
from recall_api.commands import run_command
from recall_api.deps import ServicesDep
from recall_api.errors import ApiError, ok
from recall_api.routes.admin import LoopbackOnly
from sinks.entity_links import check_cursor, mark_read, pending_ids, pending_users

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
    found = await asyncio.to_thread(
        pending_users, svc.memories, tenant, body.user_id, rescan=body.rescan
    )
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
    page = await asyncio.to_thread(
        pending_ids,
        svc.memories,
        body.user_id,
        tenant=tenant,
        after=body.after,
        limit=body.batch,
        rescan=body.rescan,
    )
    if not page.ids or page.last is None:
        return ok(EntitiesBackfilled(memories_seen=0, memories_linked=0, next=None))
    payload = EntitiesBackfillPayload(memory_ids=page.ids)
    data = await run_command(
        svc, ENTITIES_BACKFILL_OP, body.user_id, payload, tenant=tenant, caller=caller
    )
    # the writer answered: every memory of the page is read (linked, or naming nothing)
    await asyncio.to_thread(mark_read, svc.memories, tenant, body.user_id, page.last)
    done = EntitiesBackfilled.model_validate({**data, "next": page.next})
    return ok(done)
