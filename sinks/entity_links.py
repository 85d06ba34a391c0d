"""Reads for the entity commands (docs/architecture.md#entities): which memories link an
entity (``memory_entities``), and which live memories were stored before entities were
extracted (no links at all), for ``memstream entities backfill``.

Ids and counts only, never the sealed words: the writer reads the records themselves
through ``MemoryStore.load`` (its hot index first).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from schemas.storage import ENTITIES_TABLE
from sinks.memory_filter import MemoryFilter
from sinks.memory_store import MemoryStore

_LIVE = "status IN ('ACTIVE', 'ARCHIVED')"
_UNLINKED = f"{_LIVE} AND entities = ''"  # an empty link list is stored as ''


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
    store: MemoryStore, tenant: str | None = None, user_id: int | None = None
) -> list[Pending]:
    """Per user (of ``tenant``; None: every tenant), how many ACTIVE and ARCHIVED memories
    have no links, in (tenant, user) order."""
    params: dict[str, object] = {}
    where = MemoryFilter.of(tenant, user_id).where(params, _UNLINKED)
    rows = store.stores.clickhouse.query(
        f"SELECT tenant_id, user_id, count() FROM {store.db}.memories FINAL WHERE {where} "
        "GROUP BY tenant_id, user_id ORDER BY tenant_id, user_id",
        params,
    )
    return [Pending(str(t), int(u), int(n)) for t, u, n in rows]


def pending_ids(
    store: MemoryStore, user_id: int, *, tenant: str, after: str | None, limit: int
) -> tuple[list[str], str | None]:
    """Up to ``limit`` of the user's unlinked live memories after the cursor ``after``,
    oldest first (resolution reads "my sister Anna" before "my sister"), and the cursor
    of the next page (None: this was the last)."""
    params: dict[str, object] = {"limit": limit}
    conditions = [_UNLINKED]
    if after:
        at, _, mid = after.partition(":")
        params["ams"], params["amid"] = int(at), mid
        conditions.append(
            "(toUnixTimestamp64Milli(created_at), memory_id) > ({ams:Int64}, {amid:String})"
        )
    where = MemoryFilter.of(tenant, user_id).where(params, *conditions)
    rows = store.stores.clickhouse.query(
        f"SELECT toUnixTimestamp64Milli(created_at) AS at, memory_id FROM {store.db}.memories "
        f"FINAL WHERE {where} ORDER BY at, memory_id LIMIT {{limit:UInt32}}",
        params,
    )
    ids = [str(mid) for _, mid in rows]
    more = len(rows) == limit
    return ids, (f"{int(rows[-1][0])}:{rows[-1][1]}" if more and rows else None)


def check_cursor(after: str) -> bool:
    """A cursor :func:`pending_ids` made: ``<epoch ms>:<memory id>``."""
    at, sep, mid = after.partition(":")
    return bool(sep and mid) and at.lstrip("-").isdigit()
