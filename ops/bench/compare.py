"""``--compare OLD.json``: every figure two bench reports share, old, new and new/old.

A figure is a number (not a bool) reached through dicts, and through lists of dicts
(a bench's phases: ``recall.phases.1.p99_ms``). Time series and per-question rows
(``series``, ``samples``, ``questions``) are the charts' raw material, not figures, and
are skipped, as are lists of plain numbers. ``OLD`` may be a report (``report.json``:
``{"benches": {...}}``) or one bench's bare JSON from before reports (``bench
quality`` wrote ``quality-<stamp>.json``), which reads as a report of that bench.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

SKIP = frozenset({"series", "samples", "questions", "report"})


class CompareError(ValueError):
    """The file to compare with cannot be read as a bench JSON."""


def load(path: Path) -> dict[str, Any]:
    """A report from ``path``; a bare bench JSON is wrapped as a report of that bench."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CompareError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CompareError(f"{path} is not JSON: {exc}") from None
    if isinstance(doc, dict) and isinstance(doc.get("benches"), dict):
        return doc
    if isinstance(doc, dict) and isinstance(doc.get("bench"), str):
        return {"benches": {doc["bench"]: doc}}
    raise CompareError(f"{path} is neither a bench report nor a bench's JSON")


def figures(obj: Any, prefix: str = "") -> dict[str, float]:
    """Every figure of ``obj`` by its dotted path."""
    out: dict[str, float] = {}
    if isinstance(obj, bool):
        return out
    if isinstance(obj, int | float):
        if math.isfinite(obj):
            out[prefix] = float(obj)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if key not in SKIP:
                out.update(figures(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        for i, value in enumerate(obj):
            out.update(figures(value, f"{prefix}.{i}" if prefix else str(i)))
    return out


def compare(new: dict[str, Any], old: dict[str, Any]) -> list[dict[str, Any]]:
    """The figures both reports' benches hold: ``{"figure", "old", "new", "ratio"}``,
    ratio = new / old (None when old is 0), in the new report's order."""
    was = figures(old.get("benches", {}))
    rows = []
    for path, value in figures(new.get("benches", {})).items():
        if path in was:
            before = was[path]
            ratio = round(value / before, 3) if before else None
            rows.append({"figure": path, "old": before, "new": value, "ratio": ratio})
    return rows


def _num(x: float) -> str:
    return f"{x:.6g}"


def format_rows(rows: list[dict[str, Any]], old_path: str) -> str:
    """The rows as an aligned text table (``new/old``; ``-`` where old is 0)."""
    if not rows:
        return f"compared with {old_path}: no figure in common"
    width = max(len(r["figure"]) for r in rows)
    lines = [
        f"compared with {old_path}: {len(rows)} figures in common (ratio = new / old)",
        f"{'figure'.ljust(width)}  {'old':>12}  {'new':>12}  {'ratio':>7}",
    ]
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        lines.append(
            f"{r['figure'].ljust(width)}  {_num(r['old']):>12}  {_num(r['new']):>12}  {ratio:>7}"
        )
    return "\n".join(lines)
