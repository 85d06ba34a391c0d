"""/readyz follows the dependencies: 503 while one is stopped, 200 when it is back."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from ops import stack
from recall_api.app import create_app

pytestmark = pytest.mark.integration


def _wait_status(client: TestClient, status: int, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        resp = client.get("/readyz")
        if resp.status_code == status or time.monotonic() > deadline:
            assert resp.status_code == status, resp.json()
            return resp.json()
        time.sleep(0.3)


@pytest.fixture
def client(settings, stores) -> TestClient:
    return TestClient(create_app(settings, stores))


def test_healthz_and_metrics(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    client.get("/readyz")
    body = client.get("/metrics").text
    assert "memstream_dependency_up" in body and "memstream_http_requests_total" in body


def test_readyz_follows_redis(client: TestClient, servers, settings) -> None:
    _wait_status(client, 200)
    stack.proc(servers.data_dir, "redis").stop()
    try:
        body = _wait_status(client, 503, timeout=10)
        assert body["checks"]["redis"] is False and body["checks"]["kafka"] is True
    finally:
        stack.start_redis(servers.data_dir, servers.redis_url)
    _wait_status(client, 200)


def test_readyz_follows_kafka(client: TestClient, servers) -> None:
    _wait_status(client, 200)
    stack.proc(servers.data_dir, "kafka").stop()
    try:
        body = _wait_status(client, 503, timeout=15)
        assert body["checks"]["kafka"] is False and body["checks"]["redis"] is True
    finally:
        stack.start_kafka(servers.data_dir, servers.kafka_bootstrap, partitions=2)
    _wait_status(client, 200, timeout=60)
