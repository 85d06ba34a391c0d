"""`memstream bench all` (recall, ingest, quality and soak in sequence, one report) and
`memstream bench compare NEW.json OLD.json` (two reports' shared figures, new / old).

``all`` runs each bench at a small size (``SIZES``) on its own throw-away stack, one
after the other (they would measure each other if run together), each in a process of
its own (``python -m ops.bench.suite NAME SIZE OUT``: chDB opens one data dir per process,
and one bench's threads and caches must not weigh on the next); one that fails is
recorded with its error in the report and the others still run. The report is
``ops.bench.report``'s, with a summary table over every bench.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.settings import Settings, SettingsError, get_settings
from ops.bench import compare as bench_compare
from ops.bench import report as bench_report

NAMES = ("recall", "ingest", "quality", "soak")

# what each bench runs at: "small" finishes in about SMALL_MINUTES on two cores
SIZES: dict[str, dict[str, dict[str, Any]]] = {
    "small": {
        "recall": {"users": 200, "memories": 50, "pool": 1000, "clients": 10,
                   "phases": [10.0, 25.0, 50.0, None], "duration_s": 8.0},
        "ingest": {"conversations": 300, "users": 200, "rate": 20.0, "freshness_n": 100},
        "quality": {"users": 4, "sessions": 8, "capacity": "default"},
        "soak": {"duration_s": 60.0, "warmup_s": 20.0, "clients": 4, "users": 20},
    },
    "tiny": {  # seconds each: checks the harness, its numbers mean little
        "recall": {"users": 20, "memories": 10, "pool": 100, "clients": 2,
                   "phases": [10.0, None], "duration_s": 2.0},
        "ingest": {"conversations": 20, "users": 10, "rate": 10.0, "freshness_n": 10},
        "quality": {"users": 2, "sessions": 2, "capacity": "lifted"},
        "soak": {"duration_s": 4.0, "warmup_s": 1.0, "clients": 2, "users": 4},
    },
}  # fmt: skip
# measured here on 2 cores shared with other work: 9 min 12 s (recall 289 s, ingest 90,
# quality 64, soak 109) at load average ~20, 8 min 40 s (207, 66, 100, 147) at ~11; the
# driven phases are ~2.5 min of it, the rest is stacks starting, models loading, seeding
SMALL_MINUTES = "about 9"


def _recall(s: Settings, size: dict[str, Any]) -> dict[str, Any]:
    from ops.bench.recall import bench_recall

    return bench_recall(s, rate=size["phases"][0], **size)


def _ingest(s: Settings, size: dict[str, Any]) -> dict[str, Any]:
    from ops.bench.ingest import bench_ingest

    return bench_ingest(s, **size)


def _quality(s: Settings, size: dict[str, Any]) -> dict[str, Any]:
    from ops.bench.quality.generated import bench_quality

    return bench_quality(s, **size)


def _soak(s: Settings, size: dict[str, Any]) -> dict[str, Any]:
    from ops.bench.soak import bench_soak

    return bench_soak(s, **size)


RUN: dict[str, Callable[[Settings, dict[str, Any]], dict[str, Any]]] = {
    "recall": _recall, "ingest": _ingest, "quality": _quality, "soak": _soak,
}  # fmt: skip


def passed(name: str, result: dict[str, Any]) -> bool:
    """The bench's own verdict, as its command exits: an error, a non-0 recall answer, a
    conversation not ingested."""
    if "error" in result:
        return False
    if name == "recall":
        phases = result["phases"] + result.get("fit_phases", [])
        phases += [ph["context"] for ph in phases if "context" in ph]  # the context call's
        return not any(n for ph in phases for code, n in ph["codes"].items() if code != "0")
    ingest = result["ingest"] if name == "quality" else result
    if name in ("ingest", "quality"):
        return not (ingest["missing_tasks"] or ingest["failed_tasks"])
    return True


def verdict(name: str, result: dict[str, Any]) -> str:
    """``ok``; ``error`` (the bench did not finish: no figures); ``failed`` (it finished,
    figures and all, but its own check did not pass: a timeout, a lost conversation)."""
    if "error" in result:
        return "error"
    return "ok" if passed(name, result) else "failed"


def _only(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"a comma-separated subset of {','.join(NAMES)}")
    return [n for n in NAMES if n in names]  # always in the usual order


def add_all(sub: Any) -> None:
    small = SIZES["small"]
    p = sub.add_parser(
        "all",
        help="recall, ingest, quality and soak in sequence at small sizes, one report",
        description=f"Run recall, ingest, quality and soak one after the other, each on "
        f"its own throw-away stack, and write one report (summary table, every figure, "
        f"charts). --size small (default) takes {SMALL_MINUTES} minutes on 2 shared cores: "
        f"recall {small['recall']['users']} users x {small['recall']['memories']} at "
        f"10/25/50/max recalls/s, ingest {small['ingest']['conversations']} conversations, "
        f"quality {small['quality']['users']} users x {small['quality']['sessions']} "
        f"sessions, soak {small['soak']['warmup_s']:g}+{small['soak']['duration_s']:g} s. "
        "--size tiny only checks the harness (2-8 minutes here, mostly stacks starting).",
    )
    p.add_argument("--size", choices=tuple(SIZES), default="small", help="default small")
    p.add_argument("--only", type=_only, default=list(NAMES), metavar="BENCH[,BENCH]",
                   help=f"run these only ({','.join(NAMES)}; default all)")  # fmt: skip
    bench_report.add_options(p, default_out=Path("bench-out"))
    p.set_defaults(func=_run_all)


def _run_all(args: argparse.Namespace) -> int:
    try:
        settings = get_settings()
        old = bench_report.prepare(args)
    except (SettingsError, bench_report.ReportError) as exc:
        print(f"bench all: {exc}", file=sys.stderr)
        return 2
    del settings  # checked here, read again by each bench's process
    started = datetime.now(UTC)
    benches: dict[str, dict[str, Any]] = {}
    for i, name in enumerate(args.only, 1):
        size = SIZES[args.size][name]
        print(f"bench all: {name} ({i}/{len(args.only)}) {size} ...", file=sys.stderr, flush=True)
        began = time.monotonic()
        benches[name] = _in_child(name, size)
        print(f"bench all: {name} {verdict(name, benches[name])} in "
              f"{time.monotonic() - began:.0f} s",
              file=sys.stderr, flush=True)  # fmt: skip
    folder = bench_report.finish(args, benches, old, started)
    assert folder is not None  # --out always has a value here
    doc = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    for row in doc["summary"]:
        print(" | ".join(row.values()), file=sys.stderr)
    said = {name: verdict(name, result) for name, result in benches.items()}
    print(json.dumps({
        "benches": said,
        "seconds": doc["report"]["seconds"],
        "report_path": str(folder / "report.md"),
        "json_path": str(folder / "report.json"),
    }, indent=2))  # fmt: skip
    return 0 if set(said.values()) == {"ok"} else 1


def _in_child(name: str, size: dict[str, Any]) -> dict[str, Any]:
    """Run one bench in a fresh process (its progress on our stderr); its JSON."""
    with tempfile.TemporaryDirectory(prefix="memstream-bench-all-") as tmp:
        out = Path(tmp) / f"{name}.json"
        cmd = [sys.executable, "-m", "ops.bench.suite", name, json.dumps(size), str(out)]
        done = subprocess.run(cmd, env=os.environ.copy(), stdout=sys.stderr, check=False)
        if out.exists():
            return json.loads(out.read_text(encoding="utf-8"))
        return {"bench": name, "error": f"its process exited {done.returncode} without a result"}


def _child(name: str, size_json: str, out: str) -> int:
    """One bench in this process: its JSON, or ``{"error"}``, written to ``out``."""
    try:
        result = RUN[name](get_settings(), json.loads(size_json))
    except Exception as exc:  # noqa: BLE001  recorded in the report, the other benches go on
        traceback.print_exc(file=sys.stderr)
        result = {"bench": name, "error": f"{type(exc).__name__}: {exc}"[:500]}
    Path(out).write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
    return 0 if "error" not in result else 1


def add_compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="every figure two bench reports share: old, new, new/old",
        description="Print the figures NEW.json and OLD.json share (report.json files, "
        "or a bench's own JSON) with the ratio new / old.",
    )
    p.add_argument("new", type=Path, metavar="NEW.json")
    p.add_argument("old", type=Path, metavar="OLD.json")
    p.set_defaults(func=_run_compare)


def _run_compare(args: argparse.Namespace) -> int:
    try:
        new, old = bench_compare.load(args.new), bench_compare.load(args.old)
    except bench_compare.CompareError as exc:
        print(f"bench compare: {exc}", file=sys.stderr)
        return 2
    print(bench_compare.format_rows(bench_compare.compare(new, old), str(args.old)))
    return 0


if __name__ == "__main__":
    sys.exit(_child(*sys.argv[1:4]))
