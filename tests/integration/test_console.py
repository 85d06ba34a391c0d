"""The web console (``GET /console``) in a real headless Chromium against the real stack.

Why Selenium: it is the WebDriver project's own Python binding, and Debian ships a
``chromium-driver`` built from the same source as its ``chromium`` (``make test``
installs both), so the driver always matches the browser and nothing is downloaded at
run time (the driver path is given, so Selenium Manager is never asked for one).
Playwright would bring a ~100 MB Node driver tied to its own browser builds; a
hand-written DevTools client over ``websockets`` is not a maintained library.

The API runs under uvicorn in a thread with a key file of its own (an admin key and an
app key), over the session's stores and a running ingest, so every call the page makes
is an ordinary API call checked like any other. ``MEMSTREAM_CONSOLE_SCREENSHOT=path``
saves a PNG of the page after the flow (README "Console": docs/console.png).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from ops.procs import free_port
from recall_api.app import create_app
from sinks import keystore
from sinks.services import Services
from tests.helpers.secure_stack import serving
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
NOW = datetime.now(UTC)
BEFORE = NOW - timedelta(days=40)
AFTER = NOW - timedelta(days=2)


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("console-keys") / "api_keys.json"
    admin, _ = keystore.create(path, "default", "admin", [], global_grant=False, now=NOW)
    app, _ = keystore.create(path, "default", "app", ["app_chat"], global_grant=False, now=NOW)
    return path, {"admin": admin, "app": app}


@pytest.fixture(scope="module")
def base_url(settings, stores, runtime, ingest, keys) -> Iterator[str]:
    import uvicorn

    s = settings.model_copy(update={"api_keys_file": keys[0]})
    services = Services(
        s,
        stores,
        runtime.memories,
        runtime.cache,
        runtime.tasks,
        runtime.switches,
        runtime.embedder,
    )
    port = free_port()
    config = uvicorn.Config(
        create_app(s, stores, services), host="127.0.0.1", port=port, log_level="warning"
    )
    with serving(config):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def http(base_url, keys) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {keys[1]['admin']}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
        yield client


def _ok(resp: httpx.Response) -> dict:
    body = resp.json()
    assert body["code"] == 0, body
    return body["data"]


def _said(http: httpx.Client, user_id: int, text: str, ts: datetime, msg_id: str) -> None:
    """One turn through ``add`` (extraction and evolution), waited for."""
    turn = {"role": "user", "name": "Hannah", "content": text, "msg_id": msg_id}
    body = {"user_id": user_id, "app_id": "app_chat", "session_id": "trip-planning"}
    task = _ok(
        http.post("/memory/v1/add", json={**body, "messages": [{**turn, "ts": ts.isoformat()}]})
    )

    def done():
        status = _ok(http.get(f"/memory/v1/tasks/{task['task_id']}"))
        return status if status["status"] in ("done", "failed") else None

    assert wait_for(done, what=f"add {msg_id}")["status"] == "done"


@pytest.fixture(scope="module")
def seeded(http, user_id_module) -> dict[str, str]:
    """A few memories in every scope, one updated, one superseded by a later turn."""
    u = user_id_module
    ids = {}
    for name, extra in {
        "lisbon": {"level": "GLOBAL", "content": "I live in Lisbon, near the river"},
        "tea": {"app_id": "app_chat", "level": "APP", "content": "I prefer green tea to coffee"},
        "trip": {
            "app_id": "app_chat",
            "session_id": "trip-planning",
            "level": "SESSION",
            "content": "This trip we want to visit Porto by train",
        },
        "vegetarian": {"level": "GLOBAL", "content": "I am vegetarian", "is_important": True},
    }.items():
        ids[name] = _ok(http.post("/memory/v1/add_structured", json={"user_id": u, **extra}))[
            "memory_id"
        ]
    _ok(
        http.post(
            "/memory/v1/update",
            json={"user_id": u, "memory_id": ids["tea"], "content": "I prefer jasmine tea now"},
        )
    )
    _said(http, u, "I drive a VW Golf now, love it", BEFORE, "c1")
    _said(http, u, "Sold the VW Golf, we got a Toyota Prius instead", AFTER, "c2")
    return ids


@pytest.fixture(scope="module")
def user_id_module() -> int:
    import random

    return (random.getrandbits(40) << 20) + 7  # past 2**53: the page must keep every digit


@pytest.fixture(scope="module")
def browser() -> Iterator:
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("chromium or chromedriver is not installed (`make test` installs both)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1600,1100", "--force-device-scale-factor=1"):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


# --------------------------------------------------------------------------- helpers
def _open(browser, base_url: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(base_url + "/console")
    wait_for(lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))


def _type(browser, element_id: str, text: str) -> None:
    from selenium.webdriver.common.by import By

    field = browser.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(text)


def _click(browser, element_id: str) -> None:
    from selenium.webdriver.common.by import By

    browser.find_element(By.ID, element_id).click()


def _text(browser, css: str) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, css).text


def _all(browser, css: str) -> list:
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, css)


def _attrs(browser, css: str, name: str) -> list[str]:
    """One attribute of every match, read in one script (no element can go stale between)."""
    return browser.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.getAttribute(arguments[1]))",
        css,
        name,
    )


def _error_shown(browser) -> str:
    from selenium.webdriver.common.by import By

    box = browser.find_element(By.ID, "error")
    return box.text if box.is_displayed() else ""


def _connect(browser, key: str) -> None:
    _type(browser, "key", key)
    _click(browser, "connect")
    wait_for(
        lambda: _error_shown(browser) or "tenant" in _text(browser, "#identity"),
        what="the key check",
    )


# ----------------------------------------------------------------------------- tests
def test_the_page_is_served_without_a_key_and_holds_no_data(base_url, keys, seeded) -> None:
    resp = httpx.get(base_url + "/console", timeout=10)
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    csp = resp.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp and "sha256-" in csp
    for word in ("Lisbon", "jasmine", "Prius", *keys[1].values()):
        assert word not in resp.text
    # the JSON behind it needs the key like every other call
    refused = httpx.get(base_url + "/console/v1/whoami", timeout=10).json()
    assert refused["code"] == 40101 and refused["trace_id"], refused


def test_a_wrong_key_shows_the_api_error(browser, base_url, seeded, user_id_module) -> None:
    _open(browser, base_url)
    # keys are configured: the page does not connect by itself, it asks for one
    assert _text(browser, "#identity") == "not connected" and _error_shown(browser) == ""
    _connect(browser, "msk_wrong_key_for_the_console")
    shown = _error_shown(browser)
    assert "40101" in shown and "missing, unknown or revoked API key" in shown, shown
    assert _text(browser, "#identity") == "not connected"
    # a lookup with it answers the same refusal, and shows no memory
    _type(browser, "user-id", str(user_id_module))
    _click(browser, "lookup")
    wait_for(lambda: "40101" in _error_shown(browser), what="the lookup's refusal")
    assert _all(browser, "tr.memory") == []


def test_look_up_recall_history_and_change_log(
    browser, base_url, http, keys, seeded, user_id_module
) -> None:
    u = user_id_module
    _open(browser, base_url)
    _connect(browser, keys[1]["admin"])
    assert _error_shown(browser) == ""
    assert "tenant default · admin · every app" in _text(browser, "#identity")
    assert _text(browser, "#tenant") == "default"

    # memories by scope, with weight, status and source
    _type(browser, "user-id", str(u))
    _click(browser, "lookup")
    wait_for(lambda: len(_all(browser, "tr.memory")) >= 6, what="the user's memories")
    summary = _text(browser, "#user-summary")
    assert f"user {u} ·" in summary, summary  # every digit of a 60-bit id kept
    glob = _text(browser, '.scope[data-level="GLOBAL"]')
    assert "I live in Lisbon" in glob and "I am vegetarian ★" in glob
    app = _text(browser, '.scope[data-level="APP"]')
    assert "APP · app_chat" in app and "I prefer jasmine tea now" in app
    sessions = _text(browser, '.scope[data-level="SESSION"]')
    assert "SESSION · trip-planning" in sessions and "visit Porto by train" in sessions
    assert "session trip-planning" in sessions
    prius = next(r for r in _all(browser, "tr.memory") if "Prius" in r.text)
    assert "msg c2" in prius.text and prius.get_attribute("data-status") == "ACTIVE"  # its turn
    statuses = set(_attrs(browser, "tr.memory", "data-status"))
    assert {"ACTIVE", "SUPERSEDED"} <= statuses, statuses
    weights = [float(c.get_attribute("data-value")) for c in _all(browser, "tr.memory td.weight")]
    assert weights and all(0 < w <= 1 for w in weights), weights

    # the recall playground: each result's relevance, weight and score, as the API ranks them
    _type(browser, "query", "Which city does the user live in?")
    _type(browser, "recall-app", "app_chat")
    _click(browser, "run-recall")
    wait_for(lambda: _all(browser, "tr.result") or _error_shown(browser), what="recall results")
    assert _error_shown(browser) == ""
    headers = _text(browser, "#recall-results thead")
    assert "relevance" in headers and "weight" in headers and "score" in headers
    rows = _all(browser, "tr.result")
    assert "I live in Lisbon" in rows[0].text
    shown = [
        {
            "memory_id": r.get_attribute("data-memory-id"),
            **{
                k: float(r.find_element("css selector", f"td.{k}").get_attribute("data-value"))
                for k in ("relevance", "weight", "score")
            },
        }
        for r in rows
    ]
    asked = {
        "user_id": u,
        "query": "Which city does the user live in?",
        "scope": {"app_id": "app_chat"},
        "top_k": 10,
        "record_hit": False,
    }
    answer = _ok(http.post("/memory/v1/recall", json=asked))["memories"]
    assert [m["memory_id"] for m in shown] == [m["memory_id"] for m in answer]
    for seen, api in zip(shown, answer, strict=True):
        for k in ("relevance", "weight", "score"):
            assert seen[k] == pytest.approx(api[k], abs=1e-3), (k, seen, api)
    assert [m["score"] for m in shown] == sorted((m["score"] for m in shown), reverse=True)
    assert "not counted as a hit" in _text(browser, "#recall-summary")

    # a memory's history chain: the Golf superseded by the Prius, with every change
    golf = next(
        r.get_attribute("data-memory-id")
        for r in _all(browser, "tr.memory")
        if "Golf" in r.text and r.get_attribute("data-status") == "SUPERSEDED"
    )
    _type(browser, "history-id", golf)
    _click(browser, "show-history")
    wait_for(lambda: _all(browser, "ol.chain li"), what="the history chain")
    chain = [li.text for li in _all(browser, "ol.chain li")]
    assert len(chain) == 2 and "SUPERSEDED" in chain[0] and "Golf" in chain[0], chain
    assert "Prius" in chain[1] and "ACTIVE" in chain[1], chain
    ops = set(_attrs(browser, "#history tr.change", "data-op"))
    assert "ADD" in ops and ops & {"SUPERSEDE", "UPDATE"}, ops

    # the change log, filtered to one op type
    _click(browser, "show-changelog")
    wait_for(lambda: _all(browser, "#changelog tr.change"), what="the change log")
    every = set(_attrs(browser, "#changelog tr.change", "data-op"))
    assert {"ADD", "UPDATE"} <= every, every
    browser.find_element("css selector", '#cl-ops input[value="UPDATE"]').click()
    _click(browser, "show-changelog")
    wait_for(
        lambda: set(_attrs(browser, "#changelog tr.change", "data-op")) == {"UPDATE"},
        what="the UPDATE-only change log",
    )
    assert "jasmine" in _text(browser, "#changelog")
    updates = len(_all(browser, "#changelog tr.change"))
    assert _text(browser, "#changelog-summary") == f"matching changes: {updates}"

    # the entity graph of the user (the profile and graph panels: test_console_entities);
    # an entity the Golf memory names opens a timeline where that memory is superseded
    wait_for(lambda: _all(browser, "#entity-graph g.entity-node"), what="the entity graph")
    listed = _ok(http.post("/memory/v1/user/list", json={"user_id": u}))["memories"]
    named = next(m for m in listed["APP"]["app_chat"] if m["memory_id"] == golf)["entities"]
    assert named, "the Golf memory names no entity"
    browser.find_element(
        "css selector",
        f'#entity-graph g.entity-node[data-entity-id="{named[0]["entity_id"]}"] circle',
    ).click()
    wait_for(lambda: _all(browser, "#entity-timeline rect.tl-bar"), what="the entity's timeline")
    bars = dict(
        zip(
            _attrs(browser, "#entity-timeline rect.tl-bar", "data-memory-id"),
            _attrs(browser, "#entity-timeline rect.tl-bar", "data-status"),
            strict=True,
        )
    )
    assert bars[golf] == "SUPERSEDED" and "ACTIVE" in bars.values(), bars

    # no script or style was refused by the page's own Content-Security-Policy
    logs = [e["message"] for e in browser.get_log("browser")]
    assert not [m for m in logs if "Content Security Policy" in m], logs

    if shot := os.environ.get("MEMSTREAM_CONSOLE_SCREENSHOT"):
        _screenshot(browser, Path(shot))


def test_an_app_key_sees_its_apps_and_global_only(
    browser, base_url, keys, seeded, user_id_module
) -> None:
    _open(browser, base_url)
    _connect(browser, keys[1]["app"])
    assert "tenant default · app · apps app_chat" in _text(browser, "#identity")
    _type(browser, "user-id", str(user_id_module))
    _click(browser, "lookup")
    wait_for(lambda: _all(browser, "tr.memory"), what="the app key's view")
    wait_for(lambda: _all(browser, "#entity-graph g.entity-node"), what="the app key's entities")
    assert _error_shown(browser) == ""
    # a profile of another app: the API's refusal, not another app's facts
    _type(browser, "profile-app", "app_other")
    _click(browser, "show-entities")
    wait_for(lambda: _error_shown(browser), what="the profile's refusal")
    assert "40101" in _error_shown(browser) and "app_other" in _error_shown(browser)
    _type(browser, "profile-app", "app_chat")
    _click(browser, "show-entities")
    wait_for(lambda: "app app_chat" in _text(browser, "#profile-summary"), what="the app profile")
    assert _error_shown(browser) == ""
    # the query names another app: the API's refusal is shown, not an empty table
    _type(browser, "query", "tea")
    _type(browser, "recall-app", "app_other")
    _click(browser, "run-recall")
    wait_for(lambda: _error_shown(browser), what="the refusal")
    assert "40101" in _error_shown(browser) and "app_other" in _error_shown(browser)


def _screenshot(browser, path: Path) -> None:
    """The whole page (not just the window) as a PNG."""
    import base64

    browser.execute_script("window.scrollTo(0, 0)")
    height = browser.execute_script("return document.documentElement.scrollHeight")
    width = browser.execute_script("return document.documentElement.clientWidth")
    clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
    shot = browser.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
