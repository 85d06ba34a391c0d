"""`memstream bench ingest`: synthetic conversations (``ops.bench.ingest``) or a dataset
(``ops.bench.ingest_data``)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.settings import get_settings
from ops.bench import cmd_args as args_
from ops.bench import report as bench_report


def add_ingest(sub: Any) -> None:
    p = sub.add_parser(
        "ingest",
        help="Kafka -> stores: conversations/s, facts/s, add->recallable freshness p50/p95",
        description="Produce CONVERSATIONS (2 facts each) with a real Kafka producer to the "
        "ingest flow running in-process, then RATE/s for freshness.",
    )
    p.add_argument("--conversations", type=args_.positive, default=3000)
    p.add_argument("--users", type=args_.positive, default=None,
                   help="synthetic: 2000 (default); --dataset generated: 8")  # fmt: skip
    p.add_argument(
        "--dataset",
        choices=("synthetic", "generated", "realmem"),
        default="synthetic",
        help="synthetic (two short facts a conversation, default), or real conversations "
        "(generated chats, RealMem from --datasets-dir) all produced at once: turns/s, "
        "memories/s, the share of time in each step and the embedder's own rate",
    )
    p.add_argument("--datasets-dir", type=Path, default=None,
                   help="where realmem/ is (default: shared/datasets beside the repository)")  # fmt: skip
    p.add_argument("--limit", type=args_.positive, default=None,
                   help="--dataset: the first N sessions of every user (default: all)")  # fmt: skip
    p.add_argument(
        "--sessions", type=args_.positive, default=8, help="--dataset generated, per user"
    )
    p.add_argument("--capacity", type=args_.capacity, default="default",
                   help="--dataset: default, lifted or N (capacity_per_app)")  # fmt: skip
    p.add_argument("--rate", type=float, default=40.0, help="freshness phase, conversations/s")
    p.add_argument("--freshness-n", type=args_.positive, default=400)
    bench_report.add_options(p)
    p.add_argument(
        "--workers", type=args_.positive, default=1, help="Bytewax workers of the flow (node: 1)"
    )
    p.set_defaults(func=_run_ingest)


def _run_ingest(args: argparse.Namespace) -> int:
    from ops.bench.ingest import bench_ingest

    try:
        old = bench_report.prepare(args)
    except bench_report.ReportError as exc:
        print(f"bench ingest: {exc}", file=sys.stderr)
        return 2
    started = datetime.now(UTC)
    if args.dataset != "synthetic":
        return _run_ingest_data(args, old, started)
    result = bench_ingest(
        get_settings(),
        conversations=args.conversations,
        users=args.users or 2000,
        rate=args.rate,
        freshness_n=args.freshness_n,
        workers=args.workers,
    )
    print(
        f"ingest ({result['workers']} worker(s), facts embedded by worker "
        f"{result['embedded_by_worker']}): {result['conversations_per_s']} conversations/s, {result['facts_per_s']} "
        f"facts/s; freshness at {result['freshness_rate_per_s']:g}/s: p50 "
        f"{result['freshness_p50_ms']} ms, p95 {result['freshness_p95_ms']} ms",
        file=sys.stderr,
    )
    args_.print_json(result, bench_report.finish(args, {"ingest": result}, old, started))
    return 1 if result["missing_tasks"] or result["failed_tasks"] else 0


def _run_ingest_data(args: argparse.Namespace, old: Any, started: datetime) -> int:
    from ops.bench.ingest_data import bench_ingest_data
    from ops.bench.quality.generated import capacity_overrides
    from ops.bench.quality.real import DatasetError

    try:
        result = bench_ingest_data(
            get_settings(), args.dataset, args.datasets_dir, args.limit, args.users or 8,
            args.sessions, capacity_overrides(args.capacity), args.workers,
        )  # fmt: skip
    except (DatasetError, ValueError) as exc:
        print(f"bench ingest: {exc}", file=sys.stderr)
        return 2
    top = ", ".join(f"{k} {v:.0%}" for k, v in sorted(
        result["stages"]["share_of_steps"].items(), key=lambda kv: -kv[1])[:6])  # fmt: skip
    print(
        f"ingest {args.dataset} ({result['turns']} turns, capacity {args.capacity}): "
        f"{result['turns_per_s']} turns/s, {result['memories_per_s']} memories/s "
        f"({result['memories_per_turn']} a turn); embedder alone "
        f"{result['embedder_batch']['per_s']}/s (x{result['memories_per_s_vs_embedder']}); "
        f"steps: {top}",
        file=sys.stderr,
    )
    args_.print_json(result, bench_report.finish(args, {"ingest": result}, old, started))
    return 1 if result["missing_tasks"] or result["failed_tasks"] else 0
