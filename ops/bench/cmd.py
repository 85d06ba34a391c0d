"""`memstream bench <name>`: benchmarks on a throw-away local stack.

Every bench starts its own Kafka and Redis on free ports with stores in a temporary
data dir (``ops.bench.env``), so it never touches a running node or a user's data, and
prints one JSON object with its numbers (plus a one-line summary per phase).

Adding a bench: write ``_add_<name>(sub)`` that adds its sub-parser and sets
``func`` (a callable ``(args) -> int``) with ``set_defaults``, import the heavy module
inside that callable (so ``memstream --help`` stays fast), and list the function in
``BENCHES``: ``recall``, ``ingest``, ``embed``, ``quality`` (``ops.bench.quality.generated``),
``soak`` (``ops.bench.soak``: a real node process under a mixed load, watched for
leaks), ``idle`` (``ops.bench.idle``: a real node with no traffic, its CPU by
thread), ``all`` (``ops.bench.suite``: the four above in sequence at small sizes, one
report) and ``compare`` (two reports' shared figures). ``recall``, ``ingest``,
``quality`` and ``soak`` take ``--out DIR`` (a report with charts: ``ops.bench.report``;
``quality`` and ``all`` write one to ./bench-out by default) and ``--compare OLD.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.settings import SettingsError, get_settings
from ops.bench import cmd_args as args_
from ops.bench import report as bench_report
from ops.bench import suite as bench_all
from ops.bench.cmd_idle import add_idle
from ops.bench.cmd_ingest import add_ingest


def add_parser(subparsers: Any) -> None:
    """Register ``bench`` and its sub-commands on the main CLI's subparsers."""
    bench = subparsers.add_parser(
        "bench", help="benchmarks on a throw-away local stack", description=__doc__.splitlines()[0]
    )
    sub = bench.add_subparsers(dest="bench_command", required=True, metavar="BENCH")
    for register in BENCHES:
        register(sub)


# ------------------------------------------------------------------ recall
def _add_recall(sub: Any) -> None:
    p = sub.add_parser(
        "recall",
        help="recall latency (p50/p95/p99) and recalls/s through the HTTP API",
        description="Seed USERS x MEMORIES facts, serve the API in-process, drive "
        "POST /memory/v1/recall with CLIENTS concurrent clients from another process.",
    )
    p.add_argument("--users", type=args_.positive, default=1000)
    p.add_argument("--memories", type=args_.positive, default=200, help="per user (default 200)")
    p.add_argument("--clients", type=args_.positive, default=20)
    p.add_argument(
        "--rate",
        type=args_.rate,
        action="append",
        help="recalls/s, or 'max' to saturate; repeat for several phases on the same "
        "seeded stack (default: --rate 50 --rate max)",
    )
    p.add_argument("--duration", type=float, default=20.0, help="seconds per phase")
    p.add_argument("--pool", type=args_.positive, default=5000, help="distinct facts to embed")
    p.add_argument(
        "--paged",
        type=args_.count,
        default=0,
        metavar="N",
        help="per user, N paged-out memories besides the active ones (ARCHIVED by the "
        "capacity: default recall searches them too); default 0",
    )
    p.add_argument(
        "--auth",
        action="store_true",
        help="API keys on and rate limits counted (never reached): what they cost",
    )
    p.add_argument(
        "--fit-cache",
        action="store_true",
        help="size the hot cache to hold every seeded user (the best case); by default "
        "it keeps hot_cache_budget_mb, so users beyond it are loaded cold",
    )
    p.add_argument(
        "--compare-fit",
        action="store_true",
        help="after the phases, resize the cache to hold every user and run them again "
        "on the same seeded stores (the --fit-cache case, seeded once)",
    )
    p.add_argument(
        "--zipf",
        type=args_.positive_float,
        default=None,
        metavar="S",
        help="user popularity: the r-th most popular user is asked with probability "
        "proportional to 1/r^S (default: uniform)",
    )
    p.add_argument(
        "--session-len",
        type=args_.positive,
        default=1,
        metavar="N",
        help="recalls a user makes in a row (the first may be cold; default 1)",
    )
    p.add_argument(
        "--no-context",
        dest="context",
        action="store_false",
        help="skip the context call's phase after each recall phase (by default "
        "POST /memory/v1/context is driven at the same rate: its p50/p99 beside recall's)",
    )
    bench_report.add_options(p)
    p.set_defaults(func=_run_recall)


def _run_recall(args: argparse.Namespace) -> int:
    from ops.bench.recall import bench_recall

    try:
        settings = get_settings()
        old = bench_report.prepare(args)
    except (SettingsError, bench_report.ReportError) as exc:
        print(f"bench recall: {exc}", file=sys.stderr)
        return 2
    started = datetime.now(UTC)
    phases = args.rate or [50.0, None]
    print(
        f"bench recall: seeding {args.users} users x {args.memories} memories"
        f"{f' (+{args.paged} paged out)' if args.paged else ''}, then "
        f"{len(phases)} phase(s) of {args.duration:g}s with {args.clients} clients ...",
        file=sys.stderr,
        flush=True,
    )
    result = bench_recall(
        settings,
        users=args.users,
        memories=args.memories,
        clients=args.clients,
        rate=phases[0],
        duration_s=args.duration,
        pool=args.pool,
        phases=phases,
        auth=args.auth,
        fit_cache=args.fit_cache,
        zipf=args.zipf,
        session_len=args.session_len,
        compare_fit=args.compare_fit,
        paged=args.paged,
        context=args.context,
    )
    print(
        f"hot cache {result['hot_cache_budget_mb']} MB "
        f"({'fitted to every user' if args.fit_cache else 'configured budget'}), traffic "
        f"{'zipf ' + str(args.zipf) if args.zipf else 'uniform'}, sessions of "
        f"{args.session_len}",
        file=sys.stderr,
    )
    _print_phases(result["phases"])
    if args.compare_fit:
        print(f"then the hot cache fitted to every user ({result['fit_budget_mb']} MB):",
              file=sys.stderr)  # fmt: skip
        _print_phases(result["fit_phases"])
    args_.print_json(result, bench_report.finish(args, {"recall": result}, old, started))
    phases = result["phases"] + result.get("fit_phases", [])
    phases += [ph["context"] for ph in phases if "context" in ph]
    bad = sum(n for ph in phases for code, n in ph["codes"].items() if code != "0")
    return 1 if bad else 0


def _print_phases(phases: list[dict[str, Any]]) -> None:
    for ph in phases:
        hot = ph["hot_cache"]
        cold = hot["cold_load_ms"]
        paged = f", {hot['paged_held']} paged-out memories" if hot.get("paged_held") else ""
        print(
            f"{ph['mode']:>16}, {ph['clients']} clients: {ph['requests']} recalls, "
            f"{ph['recalls_per_s']}/s, p50 {ph['p50_ms']} ms, p95 {ph['p95_ms']} ms, "
            f"p99 {ph['p99_ms']} ms, timeouts {ph['timeouts']}, codes {ph['codes']}, "
            f"hit ratio {ph['hit_ratio']}, query-cache hit ratio "
            f"{ph['query_cache_hit_ratio']}; hot cache hit ratio {hot['hit_ratio']}, "
            f"{hot['cold_loads']} cold loads (p50 {cold.get('p50', '-')} / p99 "
            f"{cold.get('p99', '-')} ms), {hot['users_held']} users held"
            f"{paged}; redis "
            f"{ph['redis']['cpu_s']} s CPU, {ph['redis']['forks']} forks "
            f"({ph['redis']['children_cpu_s']} s CPU)",
            file=sys.stderr,
        )
        if "context" in ph:
            ctx = ph["context"]
            print(
                f"{'context':>16}, same rate: {ctx['requests']} calls, {ctx['per_s']}/s, "
                f"p50 {ctx['p50_ms']} ms, p95 {ctx['p95_ms']} ms, p99 {ctx['p99_ms']} ms "
                f"({ctx['p99_over_recall']}x recall's p99), timeouts {ctx['timeouts']}, "
                f"codes {ctx['codes']}",
                file=sys.stderr,
            )


# ------------------------------------------------------------------ embed
def _add_embed(sub: Any) -> None:
    p = sub.add_parser("embed", help="embedding throughput (batch) and single-query latency")
    p.add_argument("-n", type=args_.positive, default=1000, help="sentences for the batch phase")
    p.add_argument("--queries", type=args_.positive, default=200)
    p.set_defaults(func=_run_embed)


def _run_embed(args: argparse.Namespace) -> int:
    from models.bench import bench_embedding

    result = bench_embedding(get_settings(), args.n, queries=args.queries)
    print(json.dumps(result, indent=2))
    return 0


# ------------------------------------------------------------------ quality
def _add_quality(sub: Any) -> None:
    p = sub.add_parser(
        "quality",
        help="memory quality: evidence recall@k and at context budgets vs raw-turn baselines",
        description="Generate seeded two-person chats (English and Chinese) with "
        "evidence-labelled questions (or replay RealMem / MADial-Bench: --dataset), ingest "
        "them, ask through POST /memory/v1/recall, and score memstream next to BM25, dense "
        "and their RRF hybrid over the raw texts of the same data: recall@k, evidence "
        "recall at 500 / 1,000 / 2,000 / 4,000 characters and the characters of the top 10; "
        "and the session-start coverage (a recent-turns window, the memories by weight, the "
        "profile) at 1,000 / 2,000 / 4,000 characters.",
    )
    p.add_argument(
        "--dataset",
        choices=("generated", "realmem", "madial-zh", "madial-en"),
        default="generated",
        help="generated (seeded chats, default) or public data from --datasets-dir: realmem "
        "(sessions through Kafka, each question asked after exactly the sessions before it), "
        "madial-zh / madial-en (dated memories via add_structured, the dialogue as query)",
    )
    p.add_argument("--datasets-dir", type=Path, default=None,
                   help="where realmem/ and madial-bench/ are (default: shared/datasets "
                   "beside the repository)")  # fmt: skip
    p.add_argument("--limit", type=args_.positive, default=None,
                   help="a quick size: realmem the first N sessions of every persona, "
                   "madial the first N dialogues (default: all)")  # fmt: skip
    p.add_argument("--users", type=args_.positive, default=20, help="generated only")
    p.add_argument("--sessions", type=args_.positive, default=20, help="per user (default 20)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--lang", choices=("en", "zh", "both"), default="both",
                   help="both: users alternate English and Chinese (default)")  # fmt: skip
    p.add_argument(
        "--capacity",
        type=args_.capacity,
        default="default",
        help="default (the settings), lifted (nothing evicted or consolidated), or N: "
        "capacity_per_app",
    )
    bench_report.add_options(p, default_out=Path("bench-out"))
    p.set_defaults(func=_run_quality)


def _run_quality(args: argparse.Namespace) -> int:
    from ops.bench.quality.generated import bench_quality
    from ops.bench.quality.report import table

    try:
        old = bench_report.prepare(args)
    except bench_report.ReportError as exc:
        print(f"bench quality: {exc}", file=sys.stderr)
        return 2
    started = datetime.now(UTC)
    if args.dataset != "generated":
        return _run_replay(args, old, started)
    print(
        f"bench quality: {args.users} users x {args.sessions} sessions, lang {args.lang}, "
        f"capacity {args.capacity} ...",
        file=sys.stderr,
        flush=True,
    )
    result = bench_quality(
        get_settings(),
        users=args.users,
        sessions=args.sessions,
        seed=args.seed,
        lang=args.lang,
        capacity=args.capacity,
    )
    print(table(result), file=sys.stderr)
    folder = bench_report.finish(args, {"quality": result}, old, started)
    summary = {k: v for k, v in result.items() if k != "questions"}  # per question: the file
    args_.print_json(summary, folder)
    ingest = result["ingest"]
    return 1 if ingest["missing_tasks"] or ingest["failed_tasks"] else 0


def _run_replay(args: argparse.Namespace, old: Any, started: datetime) -> int:
    from ops.bench.quality import madial as quality_madial
    from ops.bench.quality import realmem as quality_realmem
    from ops.bench.quality.real import DatasetError, default_dir
    from ops.bench.quality.replay import bench_replay
    from ops.bench.quality.report import replay_table

    root = args.datasets_dir or default_dir()
    try:
        if args.dataset == "realmem":
            data = quality_realmem.load(root, args.limit)
        else:
            data = quality_madial.load(root, args.dataset.removeprefix("madial-"), args.limit)
    except DatasetError as exc:
        print(f"bench quality: {exc}", file=sys.stderr)
        return 2
    print(f"bench quality: dataset {args.dataset} from {root}, {len(data.users)} users, "
          f"{len(data.questions)} questions, capacity {args.capacity} ...",
          file=sys.stderr, flush=True)  # fmt: skip
    result = bench_replay(get_settings(), data, capacity=args.capacity, limit=args.limit)
    print(replay_table(result), file=sys.stderr)
    folder = bench_report.finish(args, {"quality": result}, old, started)
    args_.print_json({k: v for k, v in result.items() if k != "questions"}, folder)
    ingest = result["ingest"]
    return 1 if ingest["missing_tasks"] or ingest["failed_tasks"] else 0


# ------------------------------------------------------------------ soak
def _add_soak(sub: Any) -> None:
    p = sub.add_parser(
        "soak",
        help="mixed add/recall/update/delete/purge against a real node; RSS, files, threads",
        description="Start a node subprocess with API keys on, drive a mixed load from "
        "CLIENTS threads for DURATION seconds, report recall latency, every answer's code "
        "and the node's RSS, open files and threads at the start and the end.",
    )
    p.add_argument("--duration", type=float, default=300.0, help="seconds (default 300)")
    p.add_argument(
        "--warmup",
        type=float,
        default=None,
        help="seconds of the same load first, before the start figures are read: a fresh "
        "node's pools and caches fill over about 5 minutes (default 300)",
    )
    p.add_argument("--clients", type=args_.positive, default=4)
    p.add_argument("--users", type=args_.positive, default=50)
    bench_report.add_options(p)
    p.set_defaults(func=_run_soak)


def _run_soak(args: argparse.Namespace) -> int:
    from ops.bench.soak import WARMUP_S, bench_soak, summary

    try:
        old = bench_report.prepare(args)
    except bench_report.ReportError as exc:
        print(f"bench soak: {exc}", file=sys.stderr)
        return 2
    started = datetime.now(UTC)
    warmup = WARMUP_S if args.warmup is None else args.warmup
    result = bench_soak(get_settings(), args.duration, args.clients, args.users, warmup)
    print(summary(result), file=sys.stderr)
    args_.print_json(result, bench_report.finish(args, {"soak": result}, old, started))
    return 0


BENCHES: tuple[Callable[[Any], None], ...] = (
    _add_recall,
    add_ingest,
    _add_embed,
    _add_quality,
    _add_soak,
    add_idle,
    bench_all.add_all,
    bench_all.add_compare,
)
