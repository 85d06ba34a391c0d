"""The keyed writer's ``item_put``: put, replace or delete one key-value item
(docs/architecture.md#key-value-items).

Inside the user's writer, under the hot index lock, like every write of the user: the
user's ACTIVE items are read from the stores on first use and followed in the index's
``items`` from then on (never searched, counted or evicted there), so two puts of one
key in one batch see each other. A put answers once durable (the sink's write), as
``add_structured`` does.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from core.hashing import content_hash
from core.kv_items import embedded_text, item_id, item_tags, value_text
from core.user_index import UserIndex
from core.write_batch import WriteBatch
from dataflows.ingest.commands import answer, error, handler, ok
from dataflows.ingest.items import Applied
from dataflows.ingest.recorder import Recorder
from dataflows.ingest.writer import Writer
from memstream.schemas.commands import Command
from memstream.schemas.enums import KEYED_TYPES, Level, MemType, Ownership, Status
from memstream.schemas.errors import ErrorCode
from memstream.schemas.items import ItemPutPayload
from memstream.schemas.memory import MemoryRecord

ITEM_PUT_OP = "item_put"


def held_items(writer: Writer, idx: UserIndex, cmd: Command) -> dict[str, MemoryRecord]:
    """The user's ACTIVE items (under ``idx.lock``), read once per index."""
    if idx.items is None:
        rows = writer.rt.memories.load(
            cmd.user_id, statuses=[Status.ACTIVE], mem_types=KEYED_TYPES, tenant=cmd.tenant_id
        )
        idx.items = {r.memory_id: r for r in rows}
    return idx.items


def _level(p: ItemPutPayload) -> Level:
    return Level.SESSION if p.session_id else Level.APP if p.app_id else Level.GLOBAL


@handler(ITEM_PUT_OP, ItemPutPayload)
def item_put(writer: Writer, cmd: Command, p: ItemPutPayload, now: datetime) -> Applied:
    memory_id = item_id(cmd.tenant_id, cmd.user_id, p.app_id, p.session_id, p.namespace, p.key)
    idx = writer.rt.cache.get(cmd.user_id, tenant=cmd.tenant_id)
    batch = WriteBatch()
    with idx.lock:
        held = held_items(writer, idx, cmd)
        old = held.get(memory_id)
        rc = Recorder(batch, now, cmd.command_id, idx)
        if p.value is None:
            if old is None:
                return answer(cmd, batch, ok({"memory_id": memory_id, "op": "none"}))
            gone = dataclasses.replace(old, status=Status.DELETED, deleted_at=now, updated_at=now)
            rc.put_item(old, gone, None, "deleted by key")
            return answer(cmd, batch, ok({"memory_id": memory_id, "op": "delete"}))
        text = value_text(p.value)
        tags = item_tags(p.namespace, p.key, p.index)
        if old is not None and old.content == text and old.custom_tags == tags:
            return answer(cmd, batch, ok({"memory_id": memory_id, "op": "none"}))
        if old is None:
            limit = writer.s.for_app(p.app_id).item_limit
            if sum(1 for r in held.values() if r.app_id == p.app_id) >= limit:
                scope = f"app '{p.app_id}'" if p.app_id else "GLOBAL"
                full = f"item limit reached: {limit} items in {scope} (item_limit)"
                return answer(cmd, batch, error(ErrorCode.CAPACITY_FULL, full))
        vector = writer.rt.embedder.embed([embedded_text(p.value, p.index)])[0]
        level = _level(p)
        rec = MemoryRecord(
            memory_id=memory_id,
            user_id=cmd.user_id,
            tenant_id=cmd.tenant_id,
            content=text,
            content_hash=content_hash(text),
            level=level,
            ownership=Ownership.AGENT,
            mem_type=MemType.ITEM,
            weight=1.0,
            weight_at=now,
            created_at=old.created_at if old is not None else now,
            updated_at=now,
            valid_at=old.valid_at if old is not None else now,
            app_id=p.app_id,
            session_id=p.session_id if level is Level.SESSION else None,
            source_session_id=p.session_id,
            custom_tags=tags,
        )
        rc.put_item(old, rec, vector, "replaced by key" if old is not None else "put by key")
    return answer(cmd, batch, ok({"memory_id": memory_id, "op": "put"}))
