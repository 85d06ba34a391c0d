"""`memstream config set|get|unset` against a running node: a threshold changes live.

The node runs as its own process (ops.stack.start_node) on the session's Kafka under a
topic prefix of its own, with its own data dir and Redis db; the CLI runs in this
process (``ops.cli.main``) with the same environment, as an operator's shell would.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer

from core.settings import get_settings
from ops import cli, stack
from ops.procs import free_port
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.e2e

QUERY = "what food am I allergic to"
FACTS = {"app_live": "I am allergic to peanuts", "app_other": "I am allergic to shellfish"}


@dataclass
class Node:
    data_dir: Path
    env: dict[str, str]
    http: httpx.Client

    def post(self, path: str, body: dict) -> dict:
        out = self.http.post(f"/memory/v1/{path}", json=body).json()
        assert out["code"] == 0, (path, out)
        return out["data"]

    def recalled(self, user: int, app: str) -> list[float]:
        """The relevance of each memory recall gives for the app (request leaves
        min_relevance to the settings)."""
        data = self.post("recall", {"user_id": user, "query": QUERY, "scope": {"app_id": app}})
        return [m["relevance"] for m in data["memories"]]

    def logged(self, msg: str) -> list[dict]:
        """The node's JSON log lines with this message."""
        text = stack.proc(self.data_dir, "node").logfile.read_text(errors="replace")
        lines = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
        return [x for x in lines if x.get("msg") == msg]


@pytest.fixture
def node(servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Node]:
    data_dir = tmp_path / "node"
    port = free_port()
    env = {
        "MEMSTREAM_API_PORT": str(port),
        "MEMSTREAM_KAFKA_BOOTSTRAP": servers.kafka_bootstrap,
        "MEMSTREAM_KAFKA_PARTITIONS": "2",
        "MEMSTREAM_KAFKA_TOPIC_PREFIX": f"live{uuid.uuid4().hex[:8]}.",
        "MEMSTREAM_REDIS_URL": servers.redis_url.rsplit("/", 1)[0] + "/3",
        "MEMSTREAM_DATA_DIR": str(data_dir),
    }
    for k in [k for k in os.environ if k.startswith("MEMSTREAM_")]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)  # what ops.cli.main reads (get_settings)
    get_settings.cache_clear()
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
    try:
        stack.start_node(data_dir, env)
        wait_for(
            lambda: _ready(http),
            timeout=180,
            interval=0.3,
            what=f"the node ready ({stack.proc(data_dir, 'node').tail(5)})",
        )
        yield Node(data_dir, env, http)
    finally:
        http.close()
        stack.stop(data_dir, ("node",))
        get_settings.cache_clear()


def _ready(http: httpx.Client) -> bool:
    try:
        return http.get("/readyz").status_code == 200
    except httpx.HTTPError:
        return False


def config(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        rc = cli.main(["config", *argv])
    except SystemExit as exc:  # argparse: usage
        rc = int(exc.code or 0)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_a_live_min_relevance_changes_recall_of_one_app_only(node: Node, capsys) -> None:
    user = random.getrandbits(40)
    for app, fact in FACTS.items():
        node.post("add_structured", {"user_id": user, "app_id": app, "content": fact})
    before = node.recalled(user, "app_live")
    assert len(before) == 1 and 0.3 <= before[0] < 1.0, before  # above the default cut
    other = node.recalled(user, "app_other")
    assert len(other) == 1 and other[0] < 1.0, other

    rc, out, err = config(capsys, "set", "min_relevance", "1.0", "--app", "app_live", "--by", "t")
    assert rc == 0, err
    assert "min_relevance (app app_live) = 1.0 (by t at " in out
    wait_for(lambda: node.recalled(user, "app_live") == [], timeout=5, what="the live value")
    assert node.recalled(user, "app_other") == other  # another app: unchanged

    rc, out, _ = config(capsys, "get", "min_relevance", "--app", "app_live")
    got = json.loads(out)
    assert rc == 0 and got["value"] == 1.0 and got["source"] == "live" and got["by"] == "t"
    assert got["start_value"] == 0.3
    rc, out, _ = config(capsys, "get")
    assert rc == 0 and [(r["setting"], r["app"], r["value"]) for r in json.loads(out)] == [
        ("min_relevance", "app_live", 1.0)
    ]
    shown = config(capsys, "show")[1]
    assert json.loads(shown)["app_overrides"]["app_live"] == {"min_relevance": 1.0}

    # bad values: refused with the setting's name, nothing published, nothing changed
    for bad in ("7", "abc"):
        rc, out, err = config(capsys, "set", "min_relevance", bad, "--app", "app_other")
        assert rc == 2 and "min_relevance (app app_other): refused" in err, err
    rc, _, err = config(capsys, "set", "kafka_bootstrap", "10.0.0.1:9092")
    assert rc == 2 and "kafka_bootstrap: a start-time setting" in err, err
    rc, _, err = config(capsys, "set", "min_relevance")  # no value: usage
    assert rc == 2
    rc, out, _ = config(capsys, "get")
    assert [r["app"] for r in json.loads(out)] == ["app_live"]  # still the one change

    # a bad record produced by hand is ignored by the node, with its reason in the log
    producer = Producer({"bootstrap.servers": node.env["MEMSTREAM_KAFKA_BOOTSTRAP"]})
    topic = node.env["MEMSTREAM_KAFKA_TOPIC_PREFIX"] + "memory.config"
    producer.produce(topic, key=b"app/app_other/min_relevance", value=b'{"value": 7}')
    assert producer.flush(10) == 0
    ignored = wait_for(
        lambda: node.logged("memory.config record ignored"), timeout=5, what="the refusal"
    )
    assert ignored[0]["key"] == "app/app_other/min_relevance"
    assert ignored[0]["reason"].startswith("min_relevance (app app_other): refused")
    assert node.recalled(user, "app_other") == other
    changed = node.logged("live setting changed")  # every change: what, who, when
    assert [(c["key"], c["value"], c["by"]) for c in changed] == [
        ("app/app_live/min_relevance", 1.0, "t")
    ]
    assert changed[0]["at"].startswith("20")

    rc, out, _ = config(capsys, "unset", "min_relevance", "--app", "app_live")
    assert rc == 0 and "its start-time value" in out
    wait_for(lambda: node.recalled(user, "app_live") == before, timeout=5, what="the unset")
