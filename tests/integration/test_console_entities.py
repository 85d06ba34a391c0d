"""The console in local mode and its profile and entity panels, in a real headless
Chromium against the real stack (the browser and page helpers of ``test_console``).

The API runs with no key configured (local mode, as after ``make up``): the page must
connect as it opens, with no click. A user's memories name entities (``add_structured``,
and two turns through ``add`` where moving to Guangzhou supersedes living in Shenzhen);
the page draws the user's profile with the memories each item cites, the entities as an
SVG graph (a node per entity, an edge per pair that shares a memory) and, on a click, an
entity's timeline with one bar per memory. Assertions read the DOM (ids, classes, data-
attributes), never pixels. ``MEMSTREAM_CONSOLE_ENTITIES_SCREENSHOT=path`` saves a PNG.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.helpers.api_server import running_api
from tests.helpers.waiting import wait_for
from tests.integration import test_console
from tests.integration.test_console import (
    _all,
    _attrs,
    _click,
    _error_shown,
    _open,
    _screenshot,
    _text,
    _type,
)

browser = test_console.browser  # the same headless Chromium fixture (module scope)

pytestmark = pytest.mark.integration

BEFORE = datetime(2023, 3, 1, 9, 0, tzinfo=UTC)
AFTER = datetime(2023, 4, 12, 9, 0, tzinfo=UTC)
HOSTILE = "My friend Marco lives in Porto <img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def local_url(settings, stores, runtime, ingest, tmp_path_factory) -> Iterator[str]:
    no_keys = tmp_path_factory.mktemp("console-local") / "api_keys.json"  # never written
    with running_api(
        settings.model_copy(update={"api_keys_file": no_keys}), stores, runtime
    ) as url:
        yield url


@pytest.fixture(scope="module")
def http(local_url) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=local_url, timeout=30) as client:  # no key: local mode
        yield client


def _ok(resp: httpx.Response) -> dict:
    body = resp.json()
    assert body["code"] == 0, body
    return body["data"]


def _turn(http: httpx.Client, user_id: int, text: str, ts: datetime, msg_id: str) -> None:
    turn = {"role": "user", "name": "Lin", "content": text, "msg_id": msg_id, "ts": ts.isoformat()}
    body = {"user_id": user_id, "app_id": "appA", "messages": [turn]}
    task = _ok(http.post("/memory/v1/add", json=body))["task_id"]

    def done():
        got = _ok(http.get(f"/memory/v1/tasks/{task}"))
        return got if got["status"] in ("done", "failed") else None

    assert wait_for(done, what=f"add {msg_id}")["status"] == "done"


@pytest.fixture(scope="module")
def lin(http) -> dict[str, str | int]:
    """A user whose sister Anna is named twice, and who moved from Shenzhen to Guangzhou."""
    import random

    u = (random.getrandbits(40) << 20) + 11
    ids: dict[str, str | int] = {"user": u}
    for name, content in {
        "lyon": "My sister Anna lives in Lyon.",
        "chess": "Every Sunday Anna plays chess with me.",
        "marco": HOSTILE,
    }.items():
        added = http.post("/memory/v1/add_structured", json={"user_id": u, "content": content})
        ids[name] = _ok(added)["memory_id"]
    _turn(http, u, "I live in Shenzhen now", BEFORE, "c0")
    _turn(http, u, "We moved from Shenzhen to Guangzhou", AFTER, "c1")
    return ids


def _nodes(browser) -> dict[str, dict[str, str]]:
    """The graph's nodes by name: their entity id, type and memory count."""
    rows = browser.execute_script(
        "return [...document.querySelectorAll('#entity-graph g.entity-node')].map(g => ["
        "g.getAttribute('data-name'), g.getAttribute('data-entity-id'),"
        "g.getAttribute('data-type'), g.getAttribute('data-memories')])"
    )
    return {n: {"id": i, "type": t, "memories": c} for n, i, t, c in rows}


def _open_timeline(browser, node_id: str, count: int) -> list[dict[str, str]]:
    """Click an entity's node; its timeline's bars, top to bottom."""
    browser.find_element(
        "css selector", f'#entity-graph g.entity-node[data-entity-id="{node_id}"] circle'
    ).click()
    wait_for(
        lambda: (
            browser.execute_script(
                "return document.getElementById('timeline-panel').dataset.entityId"
            )
            == node_id
            and len(_all(browser, "#entity-timeline rect.tl-bar")) == count
        ),
        what="the entity's timeline",
    )
    return browser.execute_script(
        "return [...document.querySelectorAll('#entity-timeline rect.tl-bar')].map(r => ({"
        "id: r.getAttribute('data-memory-id'), status: r.getAttribute('data-status'),"
        "open: r.getAttribute('data-open'), fill: r.getAttribute('fill'),"
        "x: parseFloat(r.getAttribute('x')), w: parseFloat(r.getAttribute('width'))}))"
    )


def test_local_mode_connects_as_the_page_opens(browser, local_url) -> None:
    _open(browser, local_url)  # no key typed, no click
    wait_for(lambda: "local mode" in _text(browser, "#identity"), what="the automatic connect")
    assert "tenant default · local · every app" in _text(browser, "#identity")
    assert _text(browser, "#tenant") == "default" and _error_shown(browser) == ""
    assert "look up a user" in _text(browser, "#user-summary")


def test_profile_entity_graph_and_timelines(browser, local_url, http, lin) -> None:
    u = lin["user"]
    _open(browser, local_url)
    wait_for(lambda: "local mode" in _text(browser, "#identity"), what="the automatic connect")
    _type(browser, "user-id", str(u))
    _click(browser, "lookup")
    wait_for(
        lambda: _error_shown(browser) or _all(browser, "#entity-graph g.entity-node"),
        what="the entity graph",
    )
    assert _error_shown(browser) == ""

    # the graph: a node per entity, sized by its ACTIVE memories, coloured by type
    nodes = _nodes(browser)
    assert {"Anna", "Lyon", "Marco", "Porto", "Shenzhen", "Guangzhou"} <= set(nodes), nodes
    assert (nodes["Anna"]["type"], nodes["Anna"]["memories"]) == ("person", "2")
    assert nodes["Lyon"]["type"] == "place"
    api = {
        e["name"]: e for e in _ok(http.post("/memory/v1/entities", json={"user_id": u}))["entities"]
    }
    assert {n: v["id"] for n, v in nodes.items()} == {n: e["entity_id"] for n, e in api.items()}
    radius = dict(
        zip(
            _attrs(browser, "#entity-graph g.entity-node", "data-name"),
            map(float, _attrs(browser, "#entity-graph g.entity-node circle", "r")),
            strict=True,
        )
    )
    assert radius["Anna"] > radius["Lyon"], radius
    fills = dict(
        zip(
            _attrs(browser, "#entity-graph g.entity-node", "data-type"),
            _attrs(browser, "#entity-graph g.entity-node circle", "fill"),
            strict=True,
        )
    )
    assert fills["person"] != fills["place"], fills
    # an edge per pair of entities one memory names together, with how many they share
    edges = {
        frozenset((a, b)): n
        for a, b, n in browser.execute_script(
            "return [...document.querySelectorAll('#entity-graph line.entity-edge')].map(l => ["
            "l.getAttribute('data-a'), l.getAttribute('data-b'), l.getAttribute('data-shared')])"
        )
    }
    ids = {n: v["id"] for n, v in nodes.items()}
    assert edges[frozenset((ids["Anna"], ids["Lyon"]))] == "1", edges
    assert frozenset((ids["Marco"], ids["Porto"])) in edges
    assert frozenset((ids["Anna"], ids["Porto"])) not in edges
    assert "person" in _text(browser, "#entity-legend")
    # the layout has no randomness: drawn again, every node is where it was
    placed = _attrs(browser, "#entity-graph g.entity-node", "transform")
    drawn = _attrs(browser, "#entity-graph", "data-drawn")
    _click(browser, "show-entities")
    wait_for(
        lambda: _attrs(browser, "#entity-graph", "data-drawn") != drawn, what="the graph again"
    )
    assert _attrs(browser, "#entity-graph g.entity-node", "transform") == placed

    # the profile: items, each citing memories of this user
    wait_for(lambda: _all(browser, "#profile li.profile-item"), what="the profile")
    profile = _ok(
        http.post(
            "/memory/v1/profile",
            json={"user_id": u, "scope": {"include_global": True}, "max_chars": 2000},
        )
    )
    items = _all(browser, "#profile li.profile-item")
    assert [i.get_attribute("data-memory-ids") for i in items] == [
        " ".join(i["memory_ids"]) for i in profile["items"]
    ]
    cited = {b.text for b in _all(browser, "#profile li.profile-item .cites button.link")}
    assert cited and lin["lyon"] in cited, cited
    assert f"{len(profile['items'])} items" in _text(browser, "#profile-summary")

    # Anna's timeline: one bar per memory that names her, both still true (open to now)
    bars = _open_timeline(browser, ids["Anna"], 2)
    assert [b["id"] for b in bars] == [lin["lyon"], lin["chess"]]
    assert {(b["status"], b["open"]) for b in bars} == {("ACTIVE", "1")}
    listed = _text(browser, "#timeline-list")
    assert "My sister Anna lives in Lyon." in listed and "plays chess" in listed
    assert "Anna (person)" in _text(browser, "#timeline-title")
    assert _all(browser, "#entity-graph g.entity-node.selected")

    # Shenzhen: lived there (superseded, hatched, ends when the move began), then moved
    old, new = _open_timeline(browser, ids["Shenzhen"], 2)
    assert (old["status"], old["open"], old["fill"]) == ("SUPERSEDED", "0", "url(#tl-hatch)")
    assert (new["status"], new["open"]) == ("ACTIVE", "1") and new["fill"] != old["fill"]
    assert old["x"] < new["x"] and old["x"] + old["w"] == pytest.approx(new["x"], abs=1.0)
    rows = [li.get_attribute("data-status") for li in _all(browser, "#timeline-list li.tl-memory")]
    assert rows == ["SUPERSEDED", "ACTIVE"]
    assert "Guangzhou" in _text(browser, "#timeline-list")
    labels = [t.text for t in _all(browser, "#entity-timeline text.tl-label")]
    assert "Shenzhen" in labels[0] and "superseded" in labels[0] and "Guangzhou" in labels[1]

    # user text stays text: the markup in Marco's memory is shown, never parsed
    _open_timeline(browser, ids["Marco"], 1)
    assert "<img src=x onerror=alert(1)>" in _text(browser, "#timeline-list")
    assert _all(browser, "#entities-section img") == []
    logs = [e["message"] for e in browser.get_log("browser")]
    assert not [m for m in logs if "Content Security Policy" in m], logs

    if shot := os.environ.get("MEMSTREAM_CONSOLE_ENTITIES_SCREENSHOT"):
        _screenshot(browser, Path(shot))
