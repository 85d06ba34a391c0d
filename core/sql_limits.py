"""The bounds of an analyst's or a tenant's SQL query, and its errors told without its text.

Every ``/admin/v1/sql`` query (``memstream sql``) runs under ``limit_settings``: a time
limit (``sql_timeout_s``), a few threads, blocks small enough that the time limit is
checked often (ClickHouse checks it between blocks: with its default 65,409 rows one
step of an ``ARRAY JOIN`` ran 22 s past a 3 s limit), a result cap in rows and bytes and
a memory cap, and ``readonly = 1`` last (it forbids changing any setting after it).

``safe_error`` turns a ClickHouse error into an answer that quotes no SQL: ClickHouse's
messages quote the query (``In scope SELECT …``, a syntax error's text from the failing
position), and the query the server ran is the rewritten one (docs/security.md#tenants).
"""

from __future__ import annotations

import re

MAX_THREADS = 2
MAX_BLOCK_ROWS = 8192
MAX_RESULT_BYTES = 64 * 1024 * 1024
MAX_MEMORY_BYTES = 2 * 1024 * 1024 * 1024

_CODE = re.compile(r"Code: (\d+)\.")
_NAME = re.compile(r"\(([A-Z][A-Z0-9_]+)\)\s*(?:\(version [^)]*\))?\s*$")
_IDENT = re.compile(r"`([A-Za-z_][A-Za-z0-9_.]{0,63})`")
_NAMED = {16, 46, 47, 60}  # no such column / unknown function / identifier / table
_EXPLAINED = {
    6: "a value could not be parsed as its type",
    16: "no such column",
    42: "a function got the wrong number of arguments",
    43: "a function got an argument of the wrong type",
    46: "unknown function",
    47: "unknown column or identifier",
    53: "type mismatch",
    60: "unknown table",
    62: "syntax error: ClickHouse could not parse the query",
    70: "a value could not be converted",
    164: "the query tried to write or change a setting (read-only)",
    184: "an aggregate inside an aggregate",
    215: "a column is neither aggregated nor in GROUP BY",
    241: f"the query needed more than its memory cap ({MAX_MEMORY_BYTES >> 20} MiB)",
    396: f"the result passed its cap (max_rows, {MAX_RESULT_BYTES >> 20} MiB)",
}
TIMEOUT_CODES = frozenset({159, 394})  # TIMEOUT_EXCEEDED, QUERY_WAS_CANCELLED


def limit_settings(timeout_s: float, max_rows: int) -> str:
    """The ``SETTINGS`` clause of one query: its bounds, then ``readonly = 1``."""
    return ", ".join(
        (
            f"max_execution_time = {max(timeout_s, 0.001):g}",
            "timeout_overflow_mode = 'throw'",
            f"max_threads = {MAX_THREADS}",
            f"max_block_size = {MAX_BLOCK_ROWS}",
            f"max_result_rows = {int(max_rows)}",
            f"max_result_bytes = {MAX_RESULT_BYTES}",
            "result_overflow_mode = 'throw'",
            f"max_memory_usage = {MAX_MEMORY_BYTES}",
            "readonly = 1",
        )
    )


def error_code(message: str) -> int | None:
    """ClickHouse's error code in a driver's message (``Code: 159. DB::Exception: …``)."""
    found = _CODE.search(message)
    return int(found.group(1)) if found else None


def safe_error(message: str, timeout_s: float) -> str:
    """What the caller is told of a failed query: the reason and ClickHouse's code and
    name, and for an unknown name that name; never the message's SQL."""
    code = error_code(message)
    if code is None:
        return "the query failed in ClickHouse (its message is not shown: it may quote the query)"
    if code in TIMEOUT_CODES:
        return (
            f"the query ran past its time limit of {timeout_s:g} s (sql_timeout_s) and was stopped"
        )
    named = _NAME.search(message)
    label = f"{named.group(1)}, code {code}" if named else f"code {code}"
    why = _EXPLAINED.get(code, "ClickHouse refused the query")
    ident = _IDENT.search(message) if code in _NAMED else None
    if ident:
        why = f"{why}: {ident.group(1)}"
    return f"{why} ({label})"
