"""ops/grafana/memstream.json is a valid dashboard, and every metric it queries is one
memstream's registry holds, with the type its suffix implies and the labels it names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from prometheus_client.metrics import MetricWrapperBase

import dataflows.lag
import recall_api.hits  # noqa: F401  (registers memstream_recall_hit_events)
import sinks.user_snapshot  # noqa: F401  (registers memstream_user_snapshots)
from core import metrics

DASHBOARD = Path(__file__).resolve().parents[3] / "ops" / "grafana" / "memstream.json"
METRIC = re.compile(r"\b(memstream_[a-z0-9_]+)(\{[^}]*\})?")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
BY = re.compile(r"\bby\s*\(([^)]*)\)")
SUFFIX = {"_bucket": "histogram", "_count": "histogram", "_sum": "histogram", "_total": "counter"}


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def _families() -> dict[str, tuple[str, set[str]]]:
    """name -> (type, label names) of every memstream family in the default registry."""
    labels = {
        m._name: set(m._labelnames)
        for mod in (metrics, recall_api.hits, sinks.user_snapshot)
        for m in vars(mod).values()
        if isinstance(m, MetricWrapperBase)
    }
    labels[dataflows.lag.NAME] = {"flow", "topic", "partition"}
    out = {}
    for family in REGISTRY.collect():
        if family.name.startswith("memstream_"):
            out[family.name] = (family.type, labels.get(family.name, set()))
    return out


def _balanced(expr: str) -> bool:
    """(), {} and [] nest properly outside quoted strings (PromQL's own brackets)."""
    stack, quoted = [], False
    pairs = {")": "(", "}": "{", "]": "["}
    for ch in expr:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "({[":
            stack.append(ch)
        elif not quoted and ch in pairs and (not stack or stack.pop() != pairs[ch]):
            return False
    return not stack and not quoted


def _panels(dash: dict) -> list[dict]:
    out = []
    for p in dash["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def test_the_dashboard_is_well_formed(dashboard: dict) -> None:
    assert dashboard["title"] and dashboard["uid"] and isinstance(dashboard["schemaVersion"], int)
    panels = _panels(dashboard)
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))  # Grafana keys panels by id
    names = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "job"} <= names
    for p in panels:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        if p["type"] == "row":
            continue
        assert p["type"] in {"timeseries", "stat"} and p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)) and all(t["expr"].strip() for t in p["targets"])
        assert p["datasource"]["uid"] == "${datasource}"
        for t in p["targets"]:
            assert _balanced(t["expr"]), t["expr"]
            assert set(re.findall(r"\$\w+", t["expr"])) <= {"$job", "$__rate_interval"}
    # no two panels overlap
    cells = set()
    for p in panels:
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, p["title"]
                cells.add((x, y))


def test_every_metric_it_queries_exists_with_its_type_and_labels(dashboard: dict) -> None:
    families = _families()
    queried = set()
    for p in _panels(dashboard):
        for t in p.get("targets", []):
            expr = t["expr"]
            named = set()
            for sample, selector in METRIC.findall(expr):
                family, kind = sample, None
                for suffix, k in SUFFIX.items():
                    if sample.endswith(suffix) and sample.removesuffix(suffix) in families:
                        family, kind = sample.removesuffix(suffix), k
                assert family in families, f"{p['title']}: {sample} is not in the registry"
                ftype, labels = families[family]
                assert kind is None or ftype == kind, f"{sample}: {family} is a {ftype}"
                assert kind is not None or ftype == "gauge", f"{sample}: a {ftype} needs a suffix"
                for label in MATCHER.findall(selector):
                    assert label == "job" or label in labels, f"{sample}: no label {label}"
                named.add(family)
                queried.add(family)
            own = set().union(*(families[f][1] for f in named)) | {"le"}
            for group in BY.findall(expr):
                for label in filter(None, (x.strip() for x in group.split(","))):
                    assert label in own, f"{p['title']}: by ({label}) is no label of {named}"
    assert queried == set(families), set(families) ^ queried  # and it shows every family
