"""`memstream sql "SELECT ..."`: a read-only query on the ClickHouse store, for analysts.

Embedded chDB belongs to the node process (one process per data dir), so the query goes
to the node's loopback admin endpoint; with a ClickHouse server URL configured it goes
straight to the server. Either way it runs under ``readonly=1``, stopped after
``sql_timeout_s`` (``core.sql_limits``). With a tenant's admin key
the node answers one SELECT over that tenant's rows of ``memories``, ``memory_changelog``
and ``memory_settings`` only (``core.sql_guard``); a refusal is printed with what it names.
"""

from __future__ import annotations

import argparse
import json
import sys

import httpx

from core.settings import get_settings
from ops.client_auth import auth_headers
from recall_api.serving import api_base_url, client_verify


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("sql", help="read-only SQL on the ClickHouse store")
    p.add_argument("query")
    p.add_argument("--max-rows", type=int, default=1000)
    p.add_argument("--json", action="store_true", help="one JSON object per row")
    p.set_defaults(func=run)


def _query(query: str, max_rows: int) -> tuple[list[str], list[list]]:
    s = get_settings()
    if s.clickhouse_url.startswith(("http://", "https://")):
        from sinks.clickhouse import ClickHouseStore

        store = ClickHouseStore.from_settings(s)  # the server clickhouse_url names
        store.connect()
        columns, rows = store.query_readonly(query, max_rows, timeout_s=s.sql_timeout_s)
        return columns, [list(r) for r in rows]
    url = f"{api_base_url(s)}/admin/v1/sql"
    resp = httpx.post(
        url,
        json={"query": query, "max_rows": max_rows},
        headers=auth_headers(s),
        timeout=s.sql_timeout_s + 30,  # the node stops the query at sql_timeout_s
        verify=client_verify(s),
    ).json()
    if resp.get("code") != 0:
        raise RuntimeError(resp.get("msg", "query failed"))
    return resp["data"]["columns"], resp["data"]["rows"]


def run(args: argparse.Namespace) -> int:
    try:
        columns, rows = _query(args.query, args.max_rows)
    except httpx.HTTPError as exc:
        print(f"memstream sql: the node does not answer ({exc}); is it up?", file=sys.stderr)
        return 1
    except (
        RuntimeError,
        ValueError,
    ) as exc:  # the node's answer, or a refusal (SqlRefused/SqlFailed)
        print(f"memstream sql: {exc}", file=sys.stderr)
        return 1
    if args.json:
        for row in rows:
            print(json.dumps(dict(zip(columns, row, strict=True)), default=str, ensure_ascii=False))
        return 0
    print("\t".join(columns))
    for row in rows:
        print("\t".join("" if v is None else str(v) for v in row))
    return 0
