"""The Helm chart names settings as core/settings.py does: its list of known settings is
the Settings fields, and every MEMSTREAM_* variable it renders or documents is one."""

from __future__ import annotations

import re
from pathlib import Path

from core.settings import Settings

CHART = Path(__file__).resolve().parents[3] / "helm" / "memstream"


def test_the_charts_known_settings_are_the_settings_fields():
    listed = (CHART / "files" / "settings.txt").read_text().split()
    assert listed == list(Settings.model_fields)


def test_every_memstream_variable_in_the_chart_is_a_setting():
    fields = set(Settings.model_fields)
    texts = [p.read_text() for p in CHART.rglob("*") if p.suffix in {".yaml", ".tpl", ".txt"}]
    names = {
        m.lower() for t in texts for m in re.findall(r"MEMSTREAM_([A-Z][A-Z0-9_]*[A-Z0-9])", t)
    }
    assert names and names <= fields, sorted(names - fields)
