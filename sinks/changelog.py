"""Reads of the immutable change log (history, change_log, export), decrypted.

Sanitized rows (after a physical purge) come back with empty content and
``sanitized=True``: the fact that something happened stays auditable, the words do not.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from memstream.schemas.enums import Level, OpSource, OpType
from memstream.schemas.memory import ChangeRecord
from sinks.clickhouse import ClickHouseStore
from sinks.keyring import KeyRing
from sinks.memory_filter import Given, strs


class ChangeLog:
    def __init__(self, clickhouse: ClickHouseStore, cipher: KeyRing):
        self.ch = clickhouse
        self.cipher = cipher

    def query(
        self,
        user_id: int,
        *,
        tenant: str,
        memory_ids: Iterable[str] | None = None,
        app_id: str | None = None,
        level: Level | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        op_types: Iterable[OpType] | None = None,
        visible_apps: Iterable[str] | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> tuple[list[ChangeRecord], int]:
        """One page, oldest first, and the total count of rows that match.

        ``visible_apps`` (an app key's apps): only rows of those apps and GLOBAL rows."""
        params: dict[str, object] = {"t": tenant, "u": user_id, "lim": limit, "off": offset}
        given = Given(params, ["tenant_id = {t:String}", "user_id = {u:UInt64}"])
        given.add("memory_id IN {ids:Array(String)}", memory_ids, list)
        given.add("app_id = {app:String}", app_id)
        given.add("(level = 'GLOBAL' OR app_id IN {vis:Array(String)})", visible_apps, sorted)
        given.add("level = {lvl:String}", level, str)
        given.add("op_time >= {start:DateTime64(3, 'UTC')}", start)
        given.add("op_time < {end:DateTime64(3, 'UTC')}", end)
        given.add("op_type IN {ops:Array(String)}", op_types, strs)
        cond = " AND ".join(given.where)
        table = f"{self.ch.database}.memory_changelog FINAL"
        total = self.ch.query(f"SELECT count() FROM {table} WHERE {cond}", params)[0][0]
        rows = self.ch.query_dicts(
            f"SELECT * FROM {table} WHERE {cond} ORDER BY op_time, change_id "
            "LIMIT {lim:UInt32} OFFSET {off:UInt32}",
            params,
        )
        return [self._record(r) for r in rows], int(total)

    def _record(self, r: dict[str, Any]) -> ChangeRecord:
        sanitized, u, t = bool(r["sanitized"]), int(r["user_id"]), str(r["tenant_id"])
        op_time = r["op_time"]
        op_time = op_time.replace(tzinfo=UTC) if op_time.tzinfo is None else op_time
        return ChangeRecord(
            change_id=r["change_id"],
            memory_id=r["memory_id"],
            user_id=u,
            tenant_id=t,
            op_type=OpType(r["op_type"]),
            op_time=op_time,
            op_source=OpSource(r["op_source"]),
            app_id=r["app_id"],
            level=Level(r["level"]),
            # a purged user's rows read as empty (their data key is destroyed)
            content_before="" if sanitized else self.cipher.open(u, r["content_before"], t),
            content_after="" if sanitized else self.cipher.open(u, r["content_after"], t),
            reason=r["reason"],
            task_id=r["task_id"],
            sanitized=sanitized,
        )
