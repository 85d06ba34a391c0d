"""`memstream lifecycle run [--now ISO8601] [--user ID ...] [--direct]`: one lifecycle pass.

The clock of the pass is only ``--now``, so ``--now T+91d`` decides exactly what waiting
91 days would (decay/expiry → archive, retention → purge, reconcile).

Where it runs:
- a node is running: the pass runs inside it (``POST /admin/v1/lifecycle/run`` on the
  loopback API); its commands go through the node's keyed writer like every mutation.
  The embedded stores are locked by the node, so the CLI could not open them anyway.
- no node answers (or ``--direct``): the CLI opens the stores itself and applies the
  same command handlers in-process (``DirectVia``), then writes each batch. Nothing else
  may write those users meanwhile — which holds when no node runs.
Prints the pass summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

import httpx

from core.settings import Settings, get_settings
from ops.client_auth import auth_headers
from recall_api.serving import api_base_url, client_verify

if TYPE_CHECKING:
    import numpy as np

    from core.seams import EmbedderLike
    from dataflows.lifecycle.scan import PassSummary


class NodeUnreachable(Exception):
    """No API answered on the configured host and port."""


def parse_now(text: str) -> datetime:
    """ISO 8601 instant; 'Z' and offsets accepted, a naive value is read as UTC."""
    try:
        value = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 instant: {text!r}") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lifecycle", help="archive/expire/purge/reconcile passes")
    lsub = p.add_subparsers(dest="lifecycle_command", required=True)
    run_p = lsub.add_parser("run", help="one lifecycle pass with an explicit clock")
    run_p.add_argument("--now", type=parse_now, default=None, help="ISO 8601 (default: now)")
    run_p.add_argument(
        "--user", type=int, action="append", dest="users", help="only this user (repeatable)"
    )
    run_p.add_argument(
        "--direct", action="store_true", help="do not ask a running node; open the stores here"
    )
    run_p.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for a node")
    run_p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return execute(get_settings(), args)


def execute(settings: Settings, args: argparse.Namespace) -> int:
    now = args.now or datetime.now(UTC)
    summary: PassSummary | None = None
    if not args.direct:
        try:
            code, body = via_node(settings, now, args.users, args.timeout)
        except NodeUnreachable:
            print("no node answers; running the pass in this process", file=sys.stderr)
        else:
            if code != 200 or body.get("code") != 0:
                print(f"memstream lifecycle: the node said {code}: {body}", file=sys.stderr)
                return 1
            summary = body["data"]
    if summary is None:
        try:
            summary = run_direct(settings, now, args.users)
        except Exception as exc:  # the stores name their own failure (a locked data dir, …)
            print(f"memstream lifecycle: cannot run the pass here: {exc}", file=sys.stderr)
            return 1
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


def via_node(
    settings: Settings, now: datetime, users: list[int] | None, timeout: float
) -> tuple[int, dict]:
    host = "127.0.0.1" if settings.api_host in ("0.0.0.0", "") else settings.api_host
    host = f"[{host}]" if ":" in host else host
    url = f"{api_base_url(settings, host)}/admin/v1/lifecycle/run"
    try:
        resp = httpx.post(
            url,
            json={"now": now.isoformat(), "users": users},
            headers=auth_headers(settings),
            timeout=timeout,
            verify=client_verify(settings),
        )
    except httpx.ReadTimeout as exc:  # the node took the pass and is busy: not a second pass here
        raise TimeoutError(f"the node did not answer within {timeout:g}s") from exc
    except httpx.TransportError as exc:
        raise NodeUnreachable(str(exc)) from exc
    try:
        return resp.status_code, resp.json() if resp.content else {}
    except ValueError:
        return resp.status_code, {}


def run_direct(
    settings: Settings,
    now: datetime,
    users: list[int] | None,
    embedder: EmbedderLike | None = None,
    reconcile_grace_s: float | None = None,
) -> PassSummary:
    """Open the stores in this process and apply the pass with the handlers directly."""
    from core import tracing
    from dataflows.lifecycle.reconcile import RECONCILE_GRACE_S
    from dataflows.lifecycle.scan import run_pass
    from dataflows.lifecycle.submit import DirectVia
    from dataflows.runtime import open_runtime
    from sinks.store_model import check_store_model

    tracing.setup(settings, "memstream-lifecycle")  # the pass's trace, if otel_endpoint is set
    lazy = _LazyEmbedder(settings) if embedder is None else None
    # the lazy one only embeds (all a pass asks of it) and has no name/dim on purpose:
    # the store check is not run at the start, ``check`` runs once the model is built
    given = embedder or cast("EmbedderLike", lazy)
    # one pass: no follower
    with open_runtime(settings, embedder=given, follow=False, check_model=lazy is None) as rt:
        if lazy is not None:  # checked when built: never repair with another model's vectors
            lazy.check = lambda model: check_store_model(rt.memories, model, settings)
        grace = RECONCILE_GRACE_S if reconcile_grace_s is None else reconcile_grace_s
        return run_pass(rt, now, DirectVia(rt), users=users, reconcile_grace_s=grace)


class _LazyEmbedder:
    """Loads the model on first use: only a reconcile repair needs it, most passes none."""

    def __init__(self, settings: Settings):
        self.settings = settings
        # the store-model check, run on the model once built
        self.check: Callable[[EmbedderLike], object] | None = None
        self._inner: EmbedderLike | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self._inner is None:
            from models.factory import build_embedder

            model = build_embedder(self.settings)
            if self.check is not None:
                self.check(model)  # ModelMismatch: the pass stops, nothing written
            self._inner = model
        return self._inner.embed(texts)
