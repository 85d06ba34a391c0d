"""``resolve_user``: the keyed writer creates an external id's user, once
(docs/architecture.md#external-user-ids).

The API sends the command only when the registry had no row for the token, keyed by the
token's route (``core.external_ids.route_of``): every resolve of one external id, from
any API process, reaches this one writer, one after another. The handler reads the
registry and, finding nothing, inserts the new row itself before it returns, not in the
sink's batch: the next resolve of the same token, even in the same input batch, must
find it. The answer still leaves after the batch's write, as every command's does. A
replay (a restart before the answer) finds the row and answers ``created: false``.
"""

from __future__ import annotations

from datetime import datetime

from core.external_ids import route_of
from core.write_batch import WriteBatch
from dataflows.ingest.commands import answer, error, handler, ok
from dataflows.ingest.items import Applied
from dataflows.ingest.writer import Writer
from memstream.schemas.commands import Command
from memstream.schemas.errors import ErrorCode
from memstream.schemas.users import ResolvePayload
from sinks.user_registry import UserRegistry


@handler("resolve_user", ResolvePayload)
def resolve_user(writer: Writer, cmd: Command, p: ResolvePayload, now: datetime) -> Applied:
    if cmd.user_id != route_of(p.lookup):  # another writer could race this one
        wrong = "resolve_user must be sent under its token's route (core.external_ids)"
        return answer(cmd, WriteBatch(), error(ErrorCode.BAD_PARAMETER, wrong))
    registry = UserRegistry(writer.rt.stores.clickhouse, writer.rt.memories.cipher)
    found = registry.find(cmd.tenant_id, p.lookup)
    if found is not None:
        return answer(cmd, WriteBatch(), ok({"user_id": found, "created": False}))
    user_id = registry.create(cmd.tenant_id, p.lookup, now)
    return answer(cmd, WriteBatch(), ok({"user_id": user_id, "created": True}))
