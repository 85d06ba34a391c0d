"""The CLI's own HTTP calls to its node (httpx): /readyz and the lifecycle pass."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.settings import Settings
from ops.cli import _readyz
from ops.lifecycle_cmd import NodeUnreachable, via_node
from ops.procs import free_port


class _Node(BaseHTTPRequestHandler):
    answer: tuple[int, bytes] = (200, b"{}")
    delay_s = 0.0

    def _reply(self) -> None:
        time.sleep(self.delay_s)
        code, body = self.answer
        self.send_response(code)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _reply

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def node() -> Iterator[Settings]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Node)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Node.answer, _Node.delay_s = (200, b"{}"), 0.0
    yield Settings(api_port=server.server_address[1])
    server.shutdown()


def test_readyz_gives_the_status_and_body_of_a_ready_or_unready_node(node) -> None:
    _Node.answer = (200, json.dumps({"checks": {"redis": "ok"}}).encode())
    assert _readyz(node) == (200, {"checks": {"redis": "ok"}})
    _Node.answer = (503, json.dumps({"checks": {"kafka": "down"}}).encode())
    assert _readyz(node) == (503, {"checks": {"kafka": "down"}})
    _Node.answer = (502, b"<html>bad gateway</html>")
    assert _readyz(node) == (502, {})  # not JSON: the code still says it


def test_readyz_of_no_node_is_zero() -> None:
    assert _readyz(Settings(api_port=free_port()), timeout=2) == (0, {})


def test_a_node_that_took_the_pass_but_is_slow_is_not_unreachable(node) -> None:
    _Node.delay_s = 1.0
    with pytest.raises(TimeoutError):  # not NodeUnreachable: no second pass in-process
        via_node(node, datetime.now(UTC), None, timeout=0.2)


def test_a_node_error_body_that_is_not_json_keeps_its_code(node) -> None:
    _Node.answer = (500, b"Internal Server Error")
    assert via_node(node, datetime.now(UTC), [1], timeout=5) == (500, {})
    with pytest.raises(NodeUnreachable):
        via_node(Settings(api_port=free_port()), datetime.now(UTC), None, timeout=2)
