"""Reading stored memory rows so that one bad row never fails a user's reads (issue 31).

Older nodes stored instants no reader can hold: ``expire_at`` of ``9999-12-31T23:59:59
-01:00`` is year 10000 in UTC, which ClickHouse keeps but the driver cannot turn into a
Python datetime, so the whole query failed ("day 2932897 is outside the date range") and
every ``user/list``, ``recall``, ``export`` and purge of that user answered 500. Reads
therefore take the time columns as epoch milliseconds (``select_list``) and convert
them here, one row at a time:

* an instant beyond what Python holds (years 1..9999 UTC) is read as the nearest end of
  the stores' range (``memstream.schemas.limits.STORE_TIME_MIN/MAX``): year 10000 ⇒ 2299-12-31
  (a far-future expiry stays far future), year 0 ⇒ 1900-01-01; the row stays whole, so
  the writer can still delete, purge or expire it, and a rewrite stores the readable
  value. Counted (``memstream_store_rows_undecodable_total{action="clamped"}``) and
  logged with the memory id and the column, never the content;
* a row that still cannot be decoded (an unknown enum value, broken JSON) is left out
  of the answer, counted (``action="skipped"``) and logged the same way, instead of
  failing every read of its user.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from core.logs import describe_error
from core.metrics import STORE_ROWS_CLAMPED, STORE_ROWS_SKIPPED
from memstream.schemas.limits import STORE_TIME_MAX, STORE_TIME_MIN

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R", bound=Mapping[str, object])  # a row read through ``select_list``

TIME_COLUMNS = frozenset({
    "weight_at", "created_at", "updated_at", "last_recalled_at", "expire_at",
    "archived_at", "deleted_at", "valid_at", "invalid_at",
})  # fmt: skip
MS_SUFFIX = "__ms"
_AS_MS = {c: c + MS_SUFFIX for c in TIME_COLUMNS}  # named once, not once a row and column
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def select_list(columns: Iterable[str]) -> str:
    """The SELECT list of ``columns`` with each time column as ``<name>__ms`` (Int64 epoch
    milliseconds, NULL kept): a name of its own, so a ``WHERE`` on the column still
    compares the DateTime64 and not the alias."""
    return ", ".join(
        f"toUnixTimestamp64Milli({c}) AS {c}{MS_SUFFIX}" if c in TIME_COLUMNS else c
        for c in columns
    )


def instant(row: dict[str, Any], column: str) -> datetime | None:
    """The UTC instant of ``column`` in a row read through ``select_list``."""
    ms = row[_AS_MS.get(column) or column + MS_SUFFIX]
    if ms is None:
        return None
    try:
        # core.timeutil.from_epoch_ms, exact as it is, ~2× faster: a stored user's load
        # reads ~4 instants a row
        return _EPOCH + int(ms) * _MS
    except OverflowError:
        at = STORE_TIME_MAX if ms > 0 else STORE_TIME_MIN
        STORE_ROWS_CLAMPED.inc()
        log.warning(
            "stored instant beyond the readable range, read as the store range's end",
            extra={
                "fields": {
                    "memory_id": row.get("memory_id"),
                    "user_id": row.get("user_id"),
                    "column": column,
                    "read_as": at.isoformat(),
                }
            },
        )
        return at


def decode_rows(rows: Sequence[R], build: Callable[[R], T]) -> list[T]:
    """``build(row)`` for each row; a row it cannot decode is skipped, counted, logged."""
    out: list[T] = []
    for row in rows:
        try:
            out.append(build(row))
        except (ValueError, KeyError, TypeError, OverflowError) as exc:
            STORE_ROWS_SKIPPED.inc()
            log.error(
                "stored memory row skipped: it cannot be decoded",
                extra={
                    "fields": {
                        "memory_id": row.get("memory_id"),
                        "user_id": row.get("user_id"),
                        **describe_error(exc),
                    }
                },
            )
    return out
