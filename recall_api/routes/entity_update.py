"""``POST /memory/v1/entity/update`` (docs/api.md#entityupdate): a caller corrects how a
user's mentions were resolved: rename an entity, merge two, or split memories off one.

The correction is a command through the user's keyed writer
(``dataflows.ingest.entity_commands``), ordered with every other write of the user and
idempotent by ``request_id``. An app key changes only entities it may see and memories
it may change: the split's named memories are checked here (40401 unseen, 40101
read-only, as ``update`` does), and the writer checks every memory a rename or merge
rewrites against the key's ``access`` (all or nothing).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Response

from memstream.schemas.api import Envelope
from memstream.schemas.payloads import ENTITY_UPDATE_OP, EntityUpdatePayload
from memstream.schemas.requests import EntityUpdateRequest
from memstream.schemas.responses import EntityUpdated
from recall_api.commands import send
from recall_api.deps import CallerDep, ServicesDep
from recall_api.errors import ok

router = APIRouter(prefix="/memory/v1", tags=["entities"])


@router.post("/entity/update", response_model=Envelope[EntityUpdated])
async def entity_update(body: EntityUpdateRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """Rename, merge or split one entity; answers the entity that holds the links now."""
    if caller.is_app and body.memory_ids:
        rows = await asyncio.to_thread(
            svc.memories.load, body.user_id, memory_ids=body.memory_ids, tenant=caller.tenant
        )
        found = {r.memory_id: r for r in rows}
        for mid in body.memory_ids:
            caller.writable(found.get(mid), mid)
    fields = body.model_dump(exclude={"user_id", "request_id"}, exclude_none=True)
    payload = EntityUpdatePayload.model_validate(fields)
    if (access := caller.access_payload()) is not None:
        payload = payload.model_copy(update={"access": access})
    data = await send(svc, caller, ENTITY_UPDATE_OP, body, payload, endpoint="entity/update")
    return ok(EntityUpdated.model_validate(data))
