"""Entity commands of the keyed writer (docs/architecture.md#entities).

``entity_update``: a caller's correction of resolution (``POST /memory/v1/entity/update``,
docs/api.md#entityupdate). ``rename`` gives an entity a new name (and type), ``merge``
folds one entity into another, ``split`` moves some memories' links to a new entity.
Each memory whose links change gets a new version (the words unchanged, the links
rewritten, ``updated_at`` now) and one UPDATE change row labelled ``ENTITY_RENAME`` /
``ENTITY_MERGE`` / ``ENTITY_SPLIT``; the Recorder marks a link the version dropped
UNLINKED in ``memory_entities``. The user's registry (beside the hot index) is corrected
the same way, so the next mention resolves as the caller said, and a registry rebuilt
from the stored links answers alike: a rewritten link keeps the words the memory said
(``said``), so an old name stays a key of the entity that now holds it.

``entities_backfill``: the links of memories stored before entities were extracted
(``memstream entities backfill``, docs/operations.md#entities-backfill), resolved in the
user's registry as a new memory's are; a memory is written again only when its words
name something.

Both run under the user's hot index lock, ordered with every other write of the user.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime

from core.delete_scope import Grant, allowed
from core.entity_resolution import EntityRegistry, Known
from core.hashing import stable_id
from core.user_index import UserIndex
from core.write_batch import WriteBatch
from dataflows.ingest.commands import answer, error, handler, ok
from dataflows.ingest.entities import declared_types, linked, registry
from dataflows.ingest.items import Applied
from dataflows.ingest.recorder import Recorder
from dataflows.ingest.writer import Writer
from memstream.schemas.commands import Command
from memstream.schemas.enums import APART_TYPES, Level, OpSource, Status
from memstream.schemas.errors import ErrorCode
from memstream.schemas.memory import EntityLink, MemoryRecord
from memstream.schemas.payloads import (
    ENTITIES_BACKFILL_OP,
    ENTITY_UPDATE_OP,
    Access,
    EntitiesBackfillPayload,
    EntityUpdatePayload,
)
from memstream.schemas.tenants import id_parts
from sinks.entity_links import linking_ids

LIVE = (Status.ACTIVE, Status.ARCHIVED)
LABELS = {"rename": "ENTITY_RENAME", "merge": "ENTITY_MERGE", "split": "ENTITY_SPLIT"}


class Refused(Exception):
    """The command cannot be applied as asked: its error code and reason."""

    def __init__(self, code: ErrorCode, msg: str) -> None:
        super().__init__(msg)
        self.code, self.msg = code, msg


@handler(ENTITY_UPDATE_OP, EntityUpdatePayload)
def entity_update(writer: Writer, cmd: Command, p: EntityUpdatePayload, now: datetime) -> Applied:
    idx = writer.rt.cache.get(cmd.user_id, tenant=cmd.tenant_id)
    batch = WriteBatch()
    with idx.lock:
        reg = registry(idx)
        try:
            entity, changed = _correct(writer, cmd, idx, reg, p)
        except Refused as exc:
            return answer(cmd, batch, error(exc.code, exc.msg))
        rc = Recorder(batch, now, cmd.command_id, idx)
        reason = _reason(p, entity)
        for old, links in changed:
            rec = dataclasses.replace(old, entities=links, updated_at=now)
            rc.update(old, rec, None, reason, label=LABELS[p.op], source=OpSource.USER)
    done = {
        "op": p.op,
        "entity_id": entity.entity_id,
        "name": entity.name,
        "type": entity.type,
        "memories_changed": len(changed),
        "memory_ids": [old.memory_id for old, _ in changed],
    }
    return answer(cmd, batch, ok(done))


Changed = list[tuple[MemoryRecord, list[EntityLink]]]


def _correct(
    writer: Writer, cmd: Command, idx: UserIndex, reg: EntityRegistry, p: EntityUpdatePayload
) -> tuple[Known, Changed]:
    """The entity that holds the links afterwards and each memory's new links; the
    registry corrected. Refused (nothing changed) when the caller may not."""
    wanted = [p.entity_id] + ([p.into] if p.into else [])
    linking = _linking(writer, cmd, idx, wanted)
    reg.learn(r for r in linking if any(reg.get(e) is None for e in _ids(r)))
    known = _visible(reg.get(p.entity_id), p.entity_id, p.access)
    if p.access is not None and not known.scope and not p.access.global_grant:
        # a GLOBAL entity is every app's: changing it is a GLOBAL write
        msg = f"changing GLOBAL entity '{p.entity_id}' needs a key with the global grant"
        raise Refused(ErrorCode.UNAUTHENTICATED, msg)
    if p.op == "rename":
        mine = [r for r in linking if p.entity_id in _ids(r)]
        _writable(mine, p.access, p.entity_id)
        name, type_ = p.name or known.name, p.type or known.type
        changed = [
            (r, [_relink(x, known.entity_id, name, type_) for x in r.entities]) for r in mine
        ]
        return reg.rename(known.entity_id, name, type_), _differs(changed)
    if p.op == "merge":
        assert p.into is not None  # the payload's rule
        target = _visible(reg.get(p.into), p.into, p.access)
        # an app's entity may fold into GLOBAL's (an app memory may name a GLOBAL entity);
        # a GLOBAL one never into an app's, nor one app's into another's
        if target.scope not in ("", known.scope):
            where = f"app '{target.scope}'" if target.scope else "GLOBAL"
            msg = f"entity '{p.entity_id}' cannot merge into {where}'s entity '{p.into}'"
            raise Refused(ErrorCode.BAD_PARAMETER, msg)
        mine = [r for r in linking if p.entity_id in _ids(r)]
        _writable(mine, p.access, p.entity_id)
        changed = [(r, _merged(r.entities, known.entity_id, target)) for r in mine]
        return reg.merge(known.entity_id, target.entity_id), changed
    # split
    asked = list(dict.fromkeys(p.memory_ids or []))
    by_id = {r.memory_id: r for r in linking if p.entity_id in _ids(r)}
    for mid in asked:
        if mid not in by_id or (p.access is not None and not _readable(by_id[mid], p.access)):
            msg = f"memory '{mid}' does not name entity '{p.entity_id}'"
            raise Refused(ErrorCode.NOT_FOUND, msg)
    moving = [by_id[mid] for mid in asked]
    _writable(moving, p.access, p.entity_id)
    scope = known.scope
    new_id = stable_id("e_", *id_parts(cmd.tenant_id, cmd.user_id, scope, "split", cmd.command_id))
    name, type_ = p.name or known.name, p.type or known.type
    made = reg.split(known.entity_id, new_id, name, type_)
    changed = [
        (r, [_relink(x, known.entity_id, made.name, made.type, new_id) for x in r.entities])
        for r in moving
    ]
    return made, changed


def _linking(
    writer: Writer, cmd: Command, idx: UserIndex, entity_ids: list[str]
) -> list[MemoryRecord]:
    """The current version of each ACTIVE or ARCHIVED memory linking ``entity_ids``: the
    stored links (``memory_entities``), and the hot index's newer versions not yet there."""
    wanted = set(entity_ids)
    held = list(idx.records.values()) + (
        [] if idx.paged is None else list(idx.paged.records.values())
    )
    ids = {r.memory_id for r in held if wanted & set(_ids(r))}
    ids.update(linking_ids(writer.rt.memories, cmd.user_id, wanted, tenant=cmd.tenant_id))
    found = _current(writer, cmd, idx, sorted(ids))
    return [r for r in found.values() if r.status in LIVE and wanted & set(_ids(r))]


def _current(
    writer: Writer, cmd: Command, idx: UserIndex, ids: list[str]
) -> dict[str, MemoryRecord]:
    """The user's current records for ``ids``: the hot index (and its paged-out ones)
    first, ClickHouse for the rest."""
    found: dict[str, MemoryRecord] = {}
    for mid in ids:
        rec = idx.records.get(mid)
        if rec is None and idx.paged is not None:
            rec = idx.paged.records.get(mid)
        if rec is not None:
            found[mid] = rec
    rest = [i for i in ids if i not in found]
    if rest:
        rows = writer.rt.memories.load(cmd.user_id, memory_ids=rest, tenant=cmd.tenant_id)
        found.update({r.memory_id: r for r in rows})
    return found


def _ids(rec: MemoryRecord) -> list[str]:
    return [x["entity_id"] for x in rec.entities]


def _visible(known: Known | None, entity_id: str, access: Access | None) -> Known:
    """``known`` when the caller may see it (an app key: GLOBAL or one of its apps' entities),
    else 40401, as if it did not exist."""
    if known is None or (access is not None and known.scope and known.scope not in access.apps):
        raise Refused(ErrorCode.NOT_FOUND, f"entity '{entity_id}' not found")
    return known


def _grant(access: Access) -> Grant:
    return {"apps": access.apps, "global": access.global_grant}


def _readable(rec: MemoryRecord, access: Access) -> bool:
    """What an app key may read (``recall_api.access.Caller.can_read``)."""
    return rec.level is Level.GLOBAL or (rec.app_id is not None and rec.app_id in access.apps)


def _writable(records: Iterable[MemoryRecord], access: Access | None, entity_id: str) -> None:
    """Every memory the correction rewrites is one the caller may change, else 40101
    (nothing changed: a correction is all or nothing)."""
    if access is None:
        return
    grant = _grant(access)
    if any(not allowed(r.level, r.app_id, grant) for r in records):
        msg = f"this key may not change every memory that names entity '{entity_id}'"
        raise Refused(ErrorCode.UNAUTHENTICATED, msg)


def _relink(
    link: EntityLink, entity_id: str, name: str, type_: str, new_id: str | None = None
) -> EntityLink:
    """``link`` named ``name`` (a ``type_``, and ``new_id`` when given) if it is
    ``entity_id``'s; the words the memory said stay in ``said``."""
    if link["entity_id"] != entity_id:
        return link
    said = link["said"] or link["name"]
    out = EntityLink(
        entity_id=new_id or entity_id,
        name=name,
        type=type_,
        said="" if said == name else said,
    )
    if link.get("relation"):
        out["relation"] = link["relation"]
    return out


def _merged(links: list[EntityLink], entity_id: str, into: Known) -> list[EntityLink]:
    """``links`` with ``entity_id``'s link made ``into``'s, once: a memory that links
    both keeps ``into``'s link alone."""
    has_into = into.entity_id in {x["entity_id"] for x in links}
    out: list[EntityLink] = []
    for x in links:
        if x["entity_id"] != entity_id:
            out.append(x)
        elif not has_into:
            out.append(_relink(x, entity_id, into.name, into.type, into.entity_id))
    return out


def _differs(changed: Changed) -> Changed:
    """Only the memories whose links the correction changes (a rename to the same name
    writes nothing)."""
    return [(r, links) for r, links in changed if links != r.entities]


def _reason(p: EntityUpdatePayload, entity: Known) -> str:
    """The change row's reason: ids only (the names are the user's words, sealed)."""
    if p.op == "merge":
        return f"entity {p.entity_id} merged into {entity.entity_id}"
    if p.op == "split":
        return f"entity {p.entity_id} split: these memories name {entity.entity_id}"
    return f"entity {p.entity_id} renamed"


@handler(ENTITIES_BACKFILL_OP, EntitiesBackfillPayload)
def entities_backfill(
    writer: Writer, cmd: Command, p: EntitiesBackfillPayload, now: datetime
) -> Applied:
    idx = writer.rt.cache.get(cmd.user_id, tenant=cmd.tenant_id)
    batch = WriteBatch()
    seen: list[str] = []
    done: list[str] = []
    with idx.lock:
        asked = list(dict.fromkeys(p.memory_ids))
        found = _current(writer, cmd, idx, asked)
        rc = Recorder(batch, now, cmd.command_id, idx)
        for mid in asked:
            old = found.get(mid)
            if old is None or old.status not in LIVE or old.entities:
                continue  # gone, or linked since (a second run, an edit)
            if old.mem_type in APART_TYPES:
                continue  # a profile or an item: never linked (docs/architecture.md#entities)
            seen.append(mid)
            rec, _ = linked(old, idx, declared_types(writer.s, old.app_id))
            if rec.entities:
                rc.update(old, rec, None, "entities backfilled", label="ENTITY_BACKFILL")
                done.append(mid)
    backfilled = {"memories_seen": len(seen), "memories_linked": len(done), "memory_ids": done}
    return answer(cmd, batch, ok(backfilled))
