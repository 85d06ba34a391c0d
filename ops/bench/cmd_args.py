"""Argument types and output shared by the ``memstream bench`` sub-commands."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def print_json(result: dict[str, Any], report: Path | None) -> None:
    """The bench's JSON on stdout, with ``json_path`` (its report.json) when written."""
    extra = {"json_path": str(report / "report.json")} if report else {}
    print(json.dumps({**result, **extra}, indent=2))


def positive(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return n


def count(value: str) -> int:
    n = int(value)
    if n < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return n


def positive_float(value: str) -> float:
    x = float(value)
    if not x > 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return x


def capacity(value: str) -> str:
    if value in ("default", "lifted") or (value.isdigit() and int(value) >= 1):
        return value
    raise argparse.ArgumentTypeError("default, lifted, or a capacity_per_app >= 1")


def rate(value: str) -> float | None:
    if value.lower() in {"max", "sat", "saturate", "saturation"}:
        return None
    rate = float(value)
    if rate <= 0:
        raise argparse.ArgumentTypeError("a rate must be > 0 (or 'max')")
    return rate
