"""What every bench report must hold, whatever its numbers: ``report.json`` with its
sections, ``report.md`` whose images are PNG files next to it."""

from __future__ import annotations

import json
import re
from pathlib import Path

PNG = b"\x89PNG\r\n\x1a\n"


def assert_report_charts(folder: Path, expected: set[str]) -> list[str]:
    """The report in ``folder`` is complete and references at least ``expected`` charts,
    each an existing, valid PNG; returns every image it references."""
    doc = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert {"report", "summary", "benches"} <= set(doc), set(doc)
    machine = doc["report"]["machine"]
    assert {"cpu_count", "cpu_model", "ram_mb", "python", "packages", "git"} <= set(machine)
    assert doc["summary"] and all(set(r) >= {"bench", "throughput", "latency_ms"}
                                  for r in doc["summary"])  # fmt: skip
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Summary" in md and "## Machine" in md
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert expected <= set(images), (expected, images)
    for name in images:
        data = (folder / name).read_bytes()
        assert data.startswith(PNG) and data[12:16] == b"IHDR", name
    return images
