"""A bench run's report: ``DIR/<timestamp>/report.json``, ``report.md`` and PNG charts.

``report.json`` holds every figure: ``benches`` (each bench's own JSON, as it prints
it, with its time series), ``summary`` (the table's rows), ``report`` (when, the command,
the machine: ``ops.bench.machine``) and, with ``--compare OLD.json``, ``compare`` (every
shared figure's old and new values and their ratio: ``ops.bench.compare``).
``report.md`` is the summary table, the machine and one section per bench with its
charts (``ops.bench.sections``, ``ops.bench.charts``), the charts next to it.

The bench commands take ``--out DIR`` and ``--compare OLD.json`` through
``add_options``; ``prepare`` checks both before a bench runs (a bad path is a usage
error, exit 2, not a failure found after a twenty-minute run); ``finish`` writes.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ops.bench import compare as bench_compare
from ops.bench.machine import machine_info

COLUMNS = (
    ("bench", "bench"),
    ("throughput", "throughput"),
    ("latency_ms", "latency p50 / p95 / p99 / max (ms)"),
    ("node_cpu_cores", "node CPU (cores, mean)"),
    ("node_rss_mb_max", "node RSS max (MB)"),
    ("notes", "notes"),
)


class ReportError(Exception):
    """``--out`` or ``--compare`` cannot be used (a usage error: exit 2)."""


def add_options(p: argparse.ArgumentParser, default_out: Path | None = None) -> None:
    where = f"default ./{default_out}" if default_out else "default: no files, JSON on stdout only"
    p.add_argument("--out", type=Path, default=default_out, metavar="DIR",
                   help=f"write DIR/<timestamp>/ with report.json (every figure), report.md "
                   f"and PNG charts ({where})")  # fmt: skip
    p.add_argument("--compare", type=Path, metavar="OLD.json",
                   help="print the ratio new/old of every figure shared with an earlier "
                   "report.json (or a bench's JSON) on stderr, and put it in the report")  # fmt: skip


def prepare(args: argparse.Namespace) -> dict[str, Any] | None:
    """Check ``--out`` is a writable directory and load ``--compare``, before the run."""
    out = getattr(args, "out", None)
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ReportError(f"--out {out}: {exc.strerror or exc}") from None
        if not out.is_dir():
            raise ReportError(f"--out {out}: not a directory")
    if getattr(args, "compare", None) is None:
        return None
    try:
        return bench_compare.load(args.compare)
    except bench_compare.CompareError as exc:
        raise ReportError(f"--compare: {exc}") from None


def _stamped(out: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1, 100):
        path = out / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            continue
    raise ReportError(f"{out}: too many reports named {stamp}")


def _finite(obj: Any) -> Any:
    """NaN and infinities (a percentile of no sample) as null: strict JSON for any reader."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def _md_table(rows: list[dict[str, str]]) -> list[str]:
    lines = ["| " + " | ".join(h for _, h in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(row[k].replace("|", "/") for k, _ in COLUMNS) + " |")
    return lines


def _md_machine(m: dict[str, Any], report: dict[str, Any]) -> list[str]:
    git = m["git"]
    commit = f"{git['commit'] or 'unknown'}{' (uncommitted changes)' if git['dirty'] else ''}"
    packages = ", ".join(f"{k} {v}" for k, v in m["packages"].items())
    return [
        f"- command: `{' '.join(report['command'])}`",
        f"- started {report['started_at']}, took {report['seconds']:g} s",
        f"- commit: {commit}",
        f"- CPU: {m['cpu_count']} × {m['cpu_model']} ({m['cpus_usable']} usable), RAM "
        f"{m['ram_mb']} MB, {m['platform']}",
        f"- Python {m['python']} ({m['python_implementation']}); packages: {packages}",
    ]


def _md_compare(rows: list[dict[str, Any]], old: str) -> list[str]:
    lines = [f"Ratios new / old against `{old}` ({len(rows)} shared figures).", ""]
    if rows:
        lines += ["| figure | old | new | ratio |", "|---|---|---|---|"]
        for r in rows:
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
            lines.append(f"| {r['figure']} | {r['old']:.6g} | {r['new']:.6g} | {ratio} |")
    return lines


def write(
    out: Path,
    benches: dict[str, dict[str, Any]],
    *,
    started: datetime,
    command: list[str],
    old: dict[str, Any] | None = None,
    old_path: Path | None = None,
) -> Path:
    """Write the report of ``benches`` (name → its JSON) under ``out``; returns its dir."""
    from ops.bench.sections import section  # its charts need matplotlib: the bench extra

    folder = _stamped(out)
    machine = machine_info()
    report = {
        "started_at": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.now(UTC) - started).total_seconds(), 1),
        "command": command,
        "machine": machine,
    }
    rows: list[dict[str, str]] = []
    body: list[str] = []
    for name, result in benches.items():
        bench_rows, lines = section(name, result, folder)
        rows += bench_rows
        body += [f"## {name}", "", *lines]
    doc: dict[str, Any] = {"report": report, "summary": rows, "benches": benches}
    md = [f"# memstream bench {' + '.join(benches)}: {folder.name}", "", "## Summary", "",
          *_md_table(rows), "", "## Machine", "", *_md_machine(machine, report), "", *body]  # fmt: skip
    if old is not None:
        compared = bench_compare.compare(doc, old)
        doc["compare"] = {"old": str(old_path), "rows": compared}
        md += ["## Compared with an earlier run", "", *_md_compare(compared, str(old_path)), ""]
    (folder / "report.json").write_text(
        json.dumps(_finite(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n",
        encoding="utf-8",
    )
    (folder / "report.md").write_text("\n".join(md).rstrip() + "\n", encoding="utf-8")
    return folder


def finish(
    args: argparse.Namespace,
    benches: dict[str, dict[str, Any]],
    old: dict[str, Any] | None,
    started: datetime,
) -> Path | None:
    """After a bench: print the ratios against ``--compare`` (stderr) and write the
    report when ``--out`` is set; returns the report's dir (None without ``--out``)."""
    if old is not None:
        rows = bench_compare.compare({"benches": benches}, old)
        print(bench_compare.format_rows(rows, str(args.compare)), file=sys.stderr)
    if args.out is None:
        return None
    folder = write(args.out, benches, started=started, command=["memstream", *sys.argv[1:]],
                   old=old, old_path=args.compare)  # fmt: skip
    print(f"report: {folder / 'report.md'} (every figure: {folder / 'report.json'})",
          file=sys.stderr)  # fmt: skip
    return folder
