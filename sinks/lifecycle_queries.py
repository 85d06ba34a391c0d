"""The lifecycle's reads of ClickHouse, as ``MemoryStore`` methods (this class is its base).

The lifecycle pass (``dataflows.lifecycle``) plans from these: the keyset-paged scan of
the rows that may be due, the reconcile's sweeps, the high-water counts and the count of
change-log rows a purge blanked. Whose rows each reads is one :class:`MemoryFilter`
(tenant, users, scope); every value is a ClickHouse parameter, never SQL text.

Paged reads go in primary-key order, ``ORDER BY (user_id, memory_id)``, each page resuming
after the last key of the previous one, so a page costs the same however deep the scan
is; ``pause_s`` between pages bounds the rate of a long pass.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memstream.schemas.tenants import UserKey
from sinks.memory_filter import SCOPE_KEY, MemoryFilter
from sinks.stored_rows import select_list
from sinks.stores import Stores

Rows = list[dict[str, Any]]

# times as epoch ms (sinks.stored_rows): a legacy instant past year 9999 fails no page
_SCAN_COLUMNS = select_list((
    "tenant_id", "memory_id", "user_id", "status", "weight", "weight_at", "is_important",
    "ownership", "custom_tags", "expire_at", "archived_at", "deleted_at", "updated_at",
))  # fmt: skip
# An ACTIVE profile (mem_type PROFILE, derived: docs/architecture.md#the-profile) or item
# (ITEM, docs/architecture.md#key-value-items) never decays, expires or counts; its retired
# versions are purged as every memory's are.
_OWN = "mem_type NOT IN ('PROFILE', 'ITEM')"
# The rows that have a vector: every kind but the profile (an item's vector is of its
# embedded text, docs/architecture.md#key-value-items).
_VECTORED = "mem_type != 'PROFILE'"
_DUE = """(
    (status = 'ACTIVE' AND mem_type NOT IN ('PROFILE', 'ITEM') AND (
        (expire_at IS NOT NULL AND expire_at <= {now:DateTime64(3, 'UTC')})
        OR weight * exp(-{lam:Float64} * if(is_important, {a_imp:Float64}, {a_norm:Float64})
            * greatest(dateDiff('millisecond', weight_at, {now:DateTime64(3, 'UTC')}), 0)
            / 86400000.0) < {thr:Float64}))
    OR (status = 'DELETED' AND coalesce(deleted_at, updated_at) < {del_before:DateTime64(3, 'UTC')})
    OR (status = 'ARCHIVED' AND coalesce(archived_at, updated_at) < {arc_before:DateTime64(3, 'UTC')})
)"""


@dataclass(frozen=True, slots=True)
class DueBounds:
    """What makes a row possibly due at ``now`` (the caller adds its margins): an ACTIVE
    row expired or decayed below ``threshold``, a DELETED one older than
    ``deleted_before``, an ARCHIVED one older than ``archived_before``."""

    now: datetime
    decay_lambda: float
    alpha_important: float
    alpha_normal: float
    threshold: float
    deleted_before: datetime
    archived_before: datetime


class LifecycleQueries:
    """Mixed into ``MemoryStore``, which provides ``stores`` and ``db``."""

    stores: Stores
    db: str

    def due_rows(
        self, due: DueBounds, who: MemoryFilter, page_size: int, pause_s: float = 0.0
    ) -> Iterator[Rows]:
        """Pages of the rows that may be due (``_SCAN_COLUMNS``: no content)."""
        params: dict[str, object] = {
            "now": due.now,
            "lam": due.decay_lambda,
            "a_imp": due.alpha_important,
            "a_norm": due.alpha_normal,
            "thr": due.threshold,
            "del_before": due.deleted_before,
            "arc_before": due.archived_before,
        }
        where = who.where(params, _DUE)
        return self._pages(_SCAN_COLUMNS, where, params, page_size, pause_s)

    def live_rows_before(
        self, cutoff_version: int, who: MemoryFilter, page_size: int, pause_s: float = 0.0
    ) -> Iterator[Rows]:
        """Pages of ``tenant_id, user_id, memory_id, status`` of the ACTIVE and ARCHIVED
        rows (those that must have a vector) written before ``cutoff_version``."""
        params: dict[str, object] = {"cutoff": cutoff_version}
        where = who.where(
            params, "status IN ('ACTIVE', 'ARCHIVED')", "version < {cutoff:UInt64}", _VECTORED
        )
        cols = "tenant_id, user_id, memory_id, status"
        return self._pages(cols, where, params, page_size, pause_s)

    def known_ids(self, user_ids: Iterable[int], memory_ids: list[str]) -> set[str]:
        """Which of ``memory_ids`` (of these users, any tenant) ClickHouse holds."""
        params: dict[str, object] = {"ids": list(memory_ids)}
        where = MemoryFilter.of(users=user_ids).where(params, "memory_id IN {ids:Array(String)}")
        rows = self.stores.clickhouse.query(
            f"SELECT memory_id FROM {self.db}.memories FINAL WHERE {where}", params
        )
        return {r[0] for r in rows}

    def owners(self, memory_ids: list[str]) -> dict[str, UserKey]:
        """The (tenant, user) of each of these memories ClickHouse holds, any version."""
        rows = self.stores.clickhouse.query(
            f"SELECT memory_id, any(tenant_id), any(user_id) FROM {self.db}.memories "
            "WHERE memory_id IN {ids:Array(String)} GROUP BY memory_id",
            {"ids": list(memory_ids)},
        )
        return {mid: UserKey(t, int(u)) for mid, t, u in rows}

    def active_scope_counts(self, who: MemoryFilter, above: int) -> list[tuple[UserKey, str, int]]:
        """(user, scope, ACTIVE count) of every scope holding more than ``above``."""
        params: dict[str, object] = {"floor": above}
        where = who.where(params, "status = 'ACTIVE'", _OWN)
        rows = self.stores.clickhouse.query(
            f"SELECT tenant_id, user_id, {SCOPE_KEY} AS app, count() AS n "
            f"FROM {self.db}.memories FINAL WHERE {where} "
            "GROUP BY tenant_id, user_id, app HAVING n > {floor:UInt64}",
            params,
        )
        return [(UserKey(t, int(u)), str(app), int(n)) for t, u, app, n in rows]

    def active_totals(self, who: MemoryFilter, above: int) -> list[tuple[UserKey, int]]:
        """(user, ACTIVE count) of every user holding more than ``above``."""
        params: dict[str, object] = {"floor": above}
        where = who.where(params, "status = 'ACTIVE'", _OWN)
        rows = self.stores.clickhouse.query(
            f"SELECT tenant_id, user_id, count() AS n FROM {self.db}.memories FINAL WHERE {where} "
            "GROUP BY tenant_id, user_id HAVING n > {floor:UInt64}",
            params,
        )
        return [(UserKey(t, int(u)), int(n)) for t, u, n in rows]

    def sanitized_changes(self, memory_ids: list[str]) -> int:
        """Change-log rows with content that purges of these memories blanked (a PURGE
        row has none to blank)."""
        total = 0
        for start in range(0, len(memory_ids), 1000):
            rows = self.stores.clickhouse.query(
                f"SELECT count() FROM {self.db}.memory_changelog FINAL WHERE sanitized = 1 "
                "AND op_type != 'PURGE' AND memory_id IN {ids:Array(String)}",
                {"ids": memory_ids[start : start + 1000]},
            )
            total += int(rows[0][0]) if rows else 0
        return total

    def _pages(
        self, columns: str, where: str, params: dict[str, object], page_size: int, pause_s: float
    ) -> Iterator[Rows]:
        """Rows of ``memories FINAL`` matching ``where``, ``page_size`` at a time (keyset)."""
        ch = self.stores.clickhouse
        last: tuple[int, str] | None = None
        while True:
            keyset = (
                "" if last is None else " AND (user_id, memory_id) > ({lu:UInt64}, {lm:String})"
            )
            rows = ch.query_dicts(
                f"SELECT {columns} FROM {self.db}.memories FINAL WHERE ({where}){keyset} "
                "ORDER BY user_id, memory_id LIMIT {limit:UInt32}",
                {
                    **params,
                    "lu": last[0] if last else 0,
                    "lm": last[1] if last else "",
                    "limit": page_size,
                },
            )
            if rows:
                yield rows
            if len(rows) < page_size:
                return
            last = (int(rows[-1]["user_id"]), rows[-1]["memory_id"])
            if pause_s:
                time.sleep(pause_s)
