"""`memstream reembed [--dry-run] [--restart] [--batch-size N]`: re-embed the whole store.

A store remembers the embedding model that made its vectors, and a process configured
with another model refuses to start on it (``sinks.store_model``). This command makes
the store the configured model's: every memory is re-embedded from its (decrypted)
content and upserted into Milvus page by page, with a progress bar on stderr; it can be
stopped at any time (Ctrl-C, a crash) and run again to resume after its checkpoint
(``--restart`` starts over). The new model is recorded only when the last page is done.

It runs with memstream stopped: the embedded stores (chDB, Milvus Lite) lock the data
dir, and a process writing meanwhile would mix models. It refuses while the node of the
data dir runs; with server stores (``http://``) stop every memstream process that writes
to them first. The node's hot caches are rebuilt from Milvus at its next start.

Exit codes: 0 done (or nothing to do, or a dry run), 1 it could not run or was stopped
(run again to resume), 2 the configured model cannot be built.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import TYPE_CHECKING

from core.settings import Settings, get_settings

if TYPE_CHECKING:
    from core.seams import EmbedderLike
    from sinks.memory_store import MemoryStore
    from sinks.reembed import ReembedPlan

BATCH = 256  # memories per page: one read, one embed call, one Milvus upsert

DESCRIPTION = (
    "Re-embed every stored memory (all statuses) with the configured embedding model and "
    "record that model, so memstream starts with it. Run it with memstream stopped "
    "(`memstream down`). Resumable: stop it any time and run it again; --restart starts "
    "over. A model of another dimension gets a new Milvus collection."
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reembed",
        help="re-embed every memory with the configured embedding model (resumable)",
        description=DESCRIPTION,
    )
    p.add_argument("--dry-run", action="store_true", help="print the counts, change nothing")
    p.add_argument(
        "--restart", action="store_true", help="forget a stopped run's checkpoint; start over"
    )
    p.add_argument(
        "--batch-size", type=_positive, default=BATCH, help=f"memories per page (default {BATCH})"
    )
    p.set_defaults(func=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive number: {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    return execute(get_settings(), args)


def execute(
    settings: Settings, args: argparse.Namespace, embedder: EmbedderLike | None = None
) -> int:
    from models.errors import ModelConfigError
    from ops import stack
    from sinks.errors import StoreError
    from sinks.reembed import plan_reembed
    from sinks.services import open_services

    if (pid := stack.running(settings.data_path)["node"]) is not None:
        _say(
            f"the node is running (pid {pid}) and holds the data dir {settings.data_path}; "
            "stop it with `memstream down` (or `make down`) and run this again"
        )
        return 1
    if embedder is None:
        from models.factory import build_embedder

        try:
            embedder = build_embedder(settings)
        except ModelConfigError as exc:
            _say(f"the configured embedding model cannot be built: {exc}")
            return 2
    # the only two stores it needs, at the new model's dimension (a missing collection is
    # created so); no Kafka or Redis, no follower, and no model check: the store is
    # another model's, which is why it runs
    model: EmbedderLike = embedder  # the one loaded above
    opening = open_services(
        settings,
        lambda: model,
        stores=("clickhouse", "milvus"),
        follow=False,
        check_model=False,
        vector_dim=embedder.dim,
    )
    with contextlib.ExitStack() as on_exit:
        try:
            services = on_exit.enter_context(opening)
        except StoreError as exc:  # a locked data dir reads "cannot connect/open"
            _say(
                f"cannot open the stores ({exc}); is another memstream process using "
                f"{settings.data_path}? Stop it (`memstream down`) and run this again"
            )
            return 1
        try:
            memories = services.memories
            plan = plan_reembed(memories, embedder, restart=args.restart)
            _describe(settings, plan, args.restart)
            if args.dry_run:
                return 0
            if plan.up_to_date and not args.restart:
                print(f"nothing to do: the store already holds {plan.target}'s vectors")
                return 0
            return _carry_out(memories, embedder, plan, args.batch_size)
        except StoreError as exc:
            _say(str(exc))
            return 1


def _carry_out(
    memories: MemoryStore, embedder: EmbedderLike, plan: ReembedPlan, batch_size: int
) -> int:
    from tqdm import tqdm

    from sinks.reembed import run_reembed

    started = time.monotonic()
    bar = tqdm(
        total=plan.total, initial=plan.done, unit="mem", desc="re-embedding", file=sys.stderr
    )
    try:
        with bar:
            n = run_reembed(
                memories, embedder, plan, batch_size, on_batch=lambda k, _cp: bar.update(k)
            )
    except KeyboardInterrupt:
        _say("stopped; run `memstream reembed` again to resume after the last finished page")
        return 1
    print(
        f"re-embedded {n} memories with {plan.target} in {time.monotonic() - started:.1f}s; "
        "the store now records this model. Start memstream again (`memstream up`)."
    )
    return 0


def _describe(s: Settings, plan: ReembedPlan, restart: bool) -> None:
    counts = ", ".join(f"{status} {n}" for status, n in plan.statuses.items()) or "none"
    lines = [
        f"store: ClickHouse {s.clickhouse_target} (database {s.clickhouse_database}), "
        f"Milvus {s.milvus_target} (collection {s.milvus_collection})",
        f"recorded model:   {plan.recorded or 'none recorded'}",
        f"configured model: {plan.target}",
        f"memories: {plan.total} ({counts})",
    ]
    if plan.checkpoint is not None:
        lines.append(f"resuming a stopped run: {plan.done} done, {plan.remaining} to go")
    elif plan.discarded is not None:
        lines.append(
            f"a stopped run for {plan.discarded.target} ({plan.discarded.done} done) is "
            "discarded: starting over"
        )
    if plan.recreate_collection:
        lines.append(
            f"the collection holds {plan.collection_dim}-d vectors, the model makes "
            f"{plan.target.dim}-d: it is dropped and created anew"
        )
    lines.append(f"to embed: {0 if plan.up_to_date and not restart else plan.remaining}")
    print("\n".join(lines))


def _say(text: str) -> None:
    print(f"memstream reembed: {text}", file=sys.stderr)
