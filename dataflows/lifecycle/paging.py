"""Keyset paging over ``memories FINAL`` in primary-key order, one query per page."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from sinks.clickhouse import ClickHouseStore


def keyset_pages(
    ch: ClickHouseStore,
    columns: str,
    where: str,
    params: dict[str, Any],
    page_size: int,
    pause_s: float = 0.0,
) -> Iterator[list[dict[str, Any]]]:
    """Rows matching ``where``, ``page_size`` at a time, ``ORDER BY (user_id, memory_id)``.

    Each page resumes after the last key of the previous one, so a page costs the same
    however deep the scan is; ``pause_s`` between pages bounds the rate of a long pass.
    """
    last: tuple[int, str] | None = None
    while True:
        keyset = "" if last is None else " AND (user_id, memory_id) > ({lu:UInt64}, {lm:String})"
        rows = ch.query_dicts(
            f"SELECT {columns} FROM {ch.database}.memories FINAL WHERE ({where}){keyset} "
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
