"""`memstream entities backfill [--tenant T] [--user ID] [--batch N] [--rescan]`: link the
entities of memories stored before entities were extracted
(docs/operations.md#entities-backfill).

It needs a running node (`memstream up`, or the node of a deployment reached on its
loopback API): the node reads its own store, which the CLI cannot open while the node
holds it, and every link is written by the user's keyed writer, ordered with the user's
other writes. The CLI asks the node which users have ACTIVE or ARCHIVED memories still
to read (``POST /admin/v1/entities/pending``: no links, created before the store
extracted entities at ingest, past where the backfill last read the user), then sends
each user's memories page by page, oldest first (``POST /admin/v1/entities/backfill``),
each page one ``entities_backfill`` command; the node records how far each user is read
as each page is answered. The writer re-reads each memory and links only one that still
has no links, so the command is safe to run twice, or again after an interruption: a
second run reads none of the memories the first one read (those whose words name
nothing included), and goes on where an interrupted one stopped. ``--rescan`` reads
every memory with no links again (after a change of the rules or of an app's
``entity_types``).

Progress on stderr; on stdout one JSON summary ``{users, memories_seen,
memories_linked}``. Exit codes: 0 done, 1 no node answered or a page failed (the
summary says how far it got; run it again).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx

from core.settings import Settings, get_settings
from ops.client_auth import auth_headers
from recall_api.serving import api_base_url, client_verify

BATCH = 200  # memories per command: one page read, one writer turn
NEEDS_NODE = (
    "memstream entities backfill needs a running node (start it with `memstream up`): "
    "the node reads its store and its keyed writer writes the links"
)


DESCRIPTION = (
    "Link the entities of the ACTIVE and ARCHIVED memories stored before entities were "
    "extracted. Needs a running node (`memstream up`). Safe to run twice: a second run "
    "reads none of the memories the first one read (--rescan reads every memory with no "
    "links again). Progress on stderr; a JSON summary {users, memories_seen, "
    "memories_linked} on stdout."
)


class NodeUnreachable(Exception):
    """No API answered on the configured host and port."""


class Refused(Exception):
    """The node answered with an error envelope (or no envelope)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("entities", help="entities of stored memories")
    esub = p.add_subparsers(dest="entities_command", required=True)
    back = esub.add_parser(
        "backfill",
        help="link the entities of memories stored before entities (needs a running node)",
        description=DESCRIPTION,
    )
    back.add_argument("--tenant", default=None, help="only this tenant (local mode; default: all)")
    back.add_argument("--user", type=int, default=None, help="only this user")
    back.add_argument(
        "--batch", type=_positive, default=BATCH, help=f"memories per command (default {BATCH})"
    )
    back.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for a page")
    back.add_argument(
        "--rescan",
        action="store_true",
        help="read every memory with no links again, also those an earlier run read",
    )
    back.set_defaults(func=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"not a number from 1 to 10000: {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    return execute(get_settings(), args)


def execute(settings: Settings, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    summary = {"users": 0, "memories_seen": 0, "memories_linked": 0}
    with _client(settings, args.timeout) as http:
        try:
            ask: dict[str, Any] = {"tenant": args.tenant, "user_id": args.user}
            if _rescan(args):
                ask["rescan"] = True
            users = _post(http, "/admin/v1/entities/pending", ask)["users"]
        except NodeUnreachable as exc:
            print(f"{NEEDS_NODE} ({exc})", file=sys.stderr)
            return 1
        except Refused as exc:
            print(f"memstream entities backfill: {exc}", file=sys.stderr)
            return 1
        total = sum(int(u["pending"]) for u in users)
        print(f"{len(users)} users, {total} memories without entities to read", file=sys.stderr)
        bar = tqdm(total=total, unit="mem", desc="linking", file=sys.stderr)
        failed = None
        with bar:
            for u in users:
                try:
                    _user(http, u, args.batch, summary, bar, _rescan(args))
                except (NodeUnreachable, Refused) as exc:
                    failed = f"user {u['user_id']} ({u['tenant_id']}): {exc}"
                    break
    print(json.dumps(summary))
    if failed:
        print(f"memstream entities backfill: stopped at {failed}; run it again", file=sys.stderr)
        return 1
    return 0


def _rescan(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "rescan", False))


def _user(
    http: httpx.Client,
    user: dict[str, Any],
    batch: int,
    summary: dict[str, int],
    bar: Any,
    rescan: bool = False,
) -> None:
    """Every page of one user's memories still to read, through the node."""
    after: str | None = None
    summary["users"] += 1
    while True:
        body: dict[str, Any] = {
            "tenant": user["tenant_id"],
            "user_id": user["user_id"],
            "batch": batch,
        }
        if rescan:
            body["rescan"] = True
        if after:
            body["after"] = after
        page = _post(http, "/admin/v1/entities/backfill", body)
        summary["memories_seen"] += int(page["memories_seen"])
        summary["memories_linked"] += int(page["memories_linked"])
        bar.update(int(page["memories_seen"]))
        after = page.get("next")
        if not after:
            return


def _client(settings: Settings, timeout: float) -> httpx.Client:
    """The node's loopback API (the admin endpoints answer loopback callers only)."""
    host = "127.0.0.1" if settings.api_host in ("0.0.0.0", "") else settings.api_host
    host = f"[{host}]" if ":" in host else host
    return httpx.Client(
        base_url=api_base_url(settings, host),
        headers=auth_headers(settings),
        timeout=timeout,
        verify=client_verify(settings),
    )


def _post(http: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    try:
        resp = http.post(path, json={k: v for k, v in body.items() if v is not None})
    except httpx.TransportError as exc:
        raise NodeUnreachable(str(exc) or type(exc).__name__) from exc
    try:
        env = resp.json()
    except ValueError:
        raise Refused(f"the node answered HTTP {resp.status_code} without an envelope") from None
    if not isinstance(env, dict) or env.get("code") != 0:
        code = env.get("code") if isinstance(env, dict) else None
        msg = env.get("msg") if isinstance(env, dict) else None
        raise Refused(f"the node said {code}: {msg}")
    return dict(env.get("data") or {})
