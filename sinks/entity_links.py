"""Reads for the entity commands (docs/architecture.md#entities): which memories link an
entity (``memory_entities``), and which live memories were stored before entities were
extracted (no links at all), for ``memstream entities backfill``.

What the backfill still has to read (docs/operations.md#entities-backfill) is cheap to
tell without a mark on each memory: a memory created since the store first ran a
schema with entities (``schema_migrations``, the first version at or past 6) was read
at ingest, and the backfill records, per user, how far it has read (``store_meta``
``entities_backfill:<tenant>:<user>``, the cursor of the last page its writer
answered). So the pending memories are the unlinked live ones created before entities,
after that cursor: a second run reads none of those the first one read.

Ids and counts only, never the sealed words: the writer reads the records themselves
through ``MemoryStore.load`` (its hot index first).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memstream.schemas.enums import APART_TYPES
from memstream.schemas.storage import ENTITIES_TABLE
from sinks.memory_filter import MemoryFilter
from sinks.memory_store import MemoryStore
from sinks.store_model import StoreMeta

_LIVE = "status IN ('ACTIVE', 'ARCHIVED')"
_APART = ", ".join(f"'{t}'" for t in sorted(APART_TYPES))
# an empty link list is stored as ''; a derived memory (the profile) is memstream's own
# summary and an item (docs/architecture.md#key-value-items) an agent's value, never the
# backfill's to link
_UNLINKED = f"{_LIVE} AND entities = '' AND mem_type NOT IN ({_APART})"
ENTITIES_SINCE = 6  # the schema version that added entities: ingest links from then on
_MARK = "entities_backfill:"  # store_meta key prefix: how far the backfill read a user
_CURSOR = "(toUnixTimestamp64Milli(created_at), memory_id)"


def linking_ids(
    store: MemoryStore, user_id: int, entity_ids: Iterable[str], *, tenant: str
) -> list[str]:
    """The user's ACTIVE and ARCHIVED memories whose stored version links one of
    ``entity_ids``."""
    params: dict[str, object] = {"eids": sorted(set(entity_ids))}
    where = MemoryFilter.of(tenant, user_id).where(
        params, _LIVE, "entity_id IN {eids:Array(String)}"
    )
    rows = store.stores.clickhouse.query(
        f"SELECT DISTINCT memory_id FROM {store.db}.{ENTITIES_TABLE} FINAL WHERE {where}", params
    )
    return sorted(mid for (mid,) in rows)


@dataclass(frozen=True)
class Pending:
    """A user with live memories that have no entity links yet."""

    tenant: str
    user_id: int
    memories: int


def pending_users(
    store: MemoryStore,
    tenant: str | None = None,
    user_id: int | None = None,
    *,
    rescan: bool = False,
) -> list[Pending]:
    """Per user (of ``tenant``; None: every tenant), how many ACTIVE and ARCHIVED memories
    the backfill has still to read (the module docstring; ``rescan``: every one with no
    links), in (tenant, user) order."""
    params: dict[str, object] = {}
    conditions = [_UNLINKED]
    if not rescan:
        conditions += _not_read(store, params)
        marks = _marks(store)
        if marks:
            params["mk"] = [f"{t}:{u}" for t, u in marks]
            params["mms"] = [ms for ms, _ in marks.values()]
            params["mid"] = [mid for _, mid in marks.values()]
            # a user with no mark reads index 0: the arrays' defaults, (0, ''), before all
            at = "indexOf({mk:Array(String)}, concat(tenant_id, ':', toString(user_id)))"
            conditions.append(
                f"{_CURSOR} > (arrayElement({{mms:Array(Int64)}}, {at}), "
                f"arrayElement({{mid:Array(String)}}, {at}))"
            )
    where = MemoryFilter.of(tenant, user_id).where(params, *conditions)
    rows = store.stores.clickhouse.query(
        f"SELECT tenant_id, user_id, count() FROM {store.db}.memories FINAL WHERE {where} "
        "GROUP BY tenant_id, user_id ORDER BY tenant_id, user_id",
        params,
    )
    return [Pending(str(t), int(u), int(n)) for t, u, n in rows]


@dataclass(frozen=True)
class Page:
    """One page of a user's pending memories: their ids, the cursor of the next page
    (None: this was the last) and of this page's last memory (what to mark read)."""

    ids: list[str]
    next: str | None
    last: str | None


def pending_ids(
    store: MemoryStore,
    user_id: int,
    *,
    tenant: str,
    after: str | None,
    limit: int,
    rescan: bool = False,
) -> Page:
    """Up to ``limit`` of the user's pending memories (:func:`pending_users`) after the
    cursor ``after`` (None: after the user's mark, or from the first with ``rescan``),
    oldest first (resolution reads "my sister Anna" before "my sister")."""
    params: dict[str, object] = {"limit": limit}
    conditions = [_UNLINKED]
    if not rescan:
        conditions += _not_read(store, params)
    if after is None and not rescan:
        mark = _marks(store, tenant, user_id).get((tenant, user_id))
        after = f"{mark[0]}:{mark[1]}" if mark else None
    if after:
        at, _, mid = after.partition(":")
        params["ams"], params["amid"] = int(at), mid
        conditions.append(f"{_CURSOR} > ({{ams:Int64}}, {{amid:String}})")
    where = MemoryFilter.of(tenant, user_id).where(params, *conditions)
    rows = store.stores.clickhouse.query(
        f"SELECT toUnixTimestamp64Milli(created_at) AS at, memory_id FROM {store.db}.memories "
        f"FINAL WHERE {where} ORDER BY at, memory_id LIMIT {{limit:UInt32}}",
        params,
    )
    ids = [str(mid) for _, mid in rows]
    last = f"{int(rows[-1][0])}:{rows[-1][1]}" if rows else None
    return Page(ids, last if len(rows) == limit else None, last)


def mark_read(store: MemoryStore, tenant: str, user_id: int, cursor: str) -> None:
    """Record that the backfill has read the user's memories up to ``cursor`` (never
    moved back: a rescan's early pages leave a further mark as it is)."""
    at, _, mid = cursor.partition(":")
    new = (int(at), mid)
    old = _marks(store, tenant, user_id).get((tenant, user_id))
    if old is None or new > old:
        key = f"{_MARK}{tenant}:{user_id}"
        StoreMeta(store.stores.clickhouse).put(key, {"after_ms": new[0], "after_id": new[1]})


def _marks(
    store: MemoryStore, tenant: str | None = None, user_id: int | None = None
) -> dict[tuple[str, int], tuple[int, str]]:
    """How far the backfill read each user (one user's, when both are given)."""
    ch = store.stores.clickhouse
    if tenant is not None and user_id is not None:
        got = StoreMeta(ch).get(f"{_MARK}{tenant}:{user_id}")
        return {(tenant, user_id): (int(got["after_ms"]), str(got["after_id"]))} if got else {}
    rows = ch.query(
        f"SELECT key, value FROM {ch.database}.store_meta FINAL "
        "WHERE startsWith(key, {p:String}) AND value != ''",
        {"p": _MARK},
    )
    out: dict[tuple[str, int], tuple[int, str]] = {}
    for key, value in rows:
        t, _, u = str(key)[len(_MARK) :].rpartition(":")
        got = json.loads(value)
        out[(t, int(u))] = (int(got["after_ms"]), str(got["after_id"]))
    return out


def _not_read(store: MemoryStore, params: dict[str, object]) -> list[str]:
    """The condition "created before the store extracted entities at ingest" (none when
    the store has no record of it)."""
    since = entities_since(store)
    if since is None:
        return []
    params["since"] = since
    return ["created_at < {since:DateTime64(3, 'UTC')}"]


def entities_since(store: MemoryStore) -> datetime | None:
    """When the store first ran a schema with entities: ingest links every memory it
    makes from then on."""
    ch = store.stores.clickhouse
    rows = ch.query(
        f"SELECT min(applied_at), count() FROM {ch.database}.schema_migrations "
        "WHERE version >= {v:UInt32}",
        {"v": ENTITIES_SINCE},
    )
    return rows[0][0] if rows and int(rows[0][1]) else None


def check_cursor(after: str) -> bool:
    """A cursor :func:`pending_ids` made: ``<epoch ms>:<memory id>``."""
    at, sep, mid = after.partition(":")
    return bool(sep and mid) and at.lstrip("-").isdigit()
