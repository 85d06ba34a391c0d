"""`memstream dataflow NAME --metrics-port`: a flow run alone serves its own /metrics
(prometheus-client's server, loopback unless told otherwise); a port that cannot be
bound fails the start (exit 1) before any store is opened."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import httpx
import pytest

from core.settings import get_settings
from ops.cli import build_parser, main
from ops.process_cmd import serve_metrics
from ops.procs import free_port


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for name in list(os.environ):
        if name.startswith("MEMSTREAM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMSTREAM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMSTREAM_CLICKHOUSE_URL", "http://clickhouse.invalid:8123")
    monkeypatch.setenv("MEMSTREAM_MILVUS_URI", "http://milvus.invalid:19530")
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def test_loopback_by_default_and_off_unless_asked() -> None:
    args = build_parser().parse_args(["dataflow", "lifecycle"])
    assert args.metrics_port is None and args.metrics_host == "127.0.0.1"


def test_the_flow_families_and_the_lag_are_served() -> None:
    port = free_port()
    serve_metrics("127.0.0.1", port)
    body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    for family in (
        "memstream_dataflow_events_total",
        "memstream_dataflow_freshness_seconds",
        "memstream_kafka_consumer_lag",
        "memstream_llm_calls_total",
        "memstream_memory_evictions_total",
    ):
        assert f"# TYPE {family}" in body, family


def test_a_port_in_use_fails_the_start_before_any_store_is_opened(env, tmp_path, capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["dataflow", "ingest", "--metrics-port", str(port)]) == 1
    assert f"--metrics-port {port}" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()
