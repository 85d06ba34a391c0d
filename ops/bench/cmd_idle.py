"""`memstream bench idle`: a node with no traffic, its CPU by thread (``ops.bench.idle``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.settings import get_settings
from ops.bench import cmd_args as args_


def add_idle(sub: Any) -> None:
    p = sub.add_parser(
        "idle",
        help="an idle node's CPU: CPU-s per minute overall and by thread group",
        description="Start a node on a throw-away stack, send it nothing, and read the CPU "
        "time of the node process and of each of its threads (and of the Kafka broker and "
        "Redis) over ROUNDS windows of DURATION seconds. 60 CPU-s/min is one core.",
    )
    p.add_argument("--duration", type=args_.positive_float, default=60.0,
                   help="seconds per window (default 60)")  # fmt: skip
    p.add_argument("--rounds", type=args_.positive, default=2, help="windows (default 2)")
    p.add_argument("--settle", type=float, default=None, metavar="S",
                   help="seconds after /readyz before the first window (default 20)")  # fmt: skip
    p.add_argument("--json", type=Path, default=None, metavar="FILE",
                   help="also write the JSON to FILE")  # fmt: skip
    p.set_defaults(func=_run_idle)


def _run_idle(args: argparse.Namespace) -> int:
    from ops.bench.idle import SETTLE_S, bench_idle, summary

    settle = SETTLE_S if args.settle is None else max(0.0, args.settle)
    print(
        f"bench idle: a node on a private stack, {args.rounds} window(s) of "
        f"{args.duration:g}s after {settle:g}s ...",
        file=sys.stderr,
        flush=True,
    )
    result = bench_idle(get_settings(), args.duration, args.rounds, settle)
    print(summary(result), file=sys.stderr)
    text = json.dumps(result, indent=2)
    if args.json is not None:
        try:
            args.json.write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"bench idle: --json {args.json}: {exc.strerror or exc}", file=sys.stderr)
            print(text)
            return 2
    print(text)
    return 0
