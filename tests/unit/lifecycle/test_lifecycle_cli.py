"""`memstream lifecycle run`: arguments, and the node path against a real local server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.settings import Settings
from ops.cli import build_parser
from ops.lifecycle_cmd import NodeUnreachable, execute, parse_now, via_node
from ops.procs import free_port


def test_parse_now_accepts_z_offsets_and_naive_utc() -> None:
    want = datetime(2026, 4, 1, 8, 30, tzinfo=UTC)
    assert parse_now("2026-04-01T08:30:00Z") == want
    assert parse_now("2026-04-01T10:30:00+02:00") == want
    assert parse_now("2026-04-01T08:30:00") == want
    assert parse_now("2026-04-01T10:30:00+02:00").tzinfo == UTC
    assert parse_now("2026-04-01") == datetime(2026, 4, 1, tzinfo=UTC)


def test_the_cli_parses_lifecycle_run() -> None:
    args = build_parser().parse_args(
        ["lifecycle", "run", "--now", "2026-04-01T00:00:00Z", "--user", "5", "--user", "6"]
    )
    assert args.now == datetime(2026, 4, 1, tzinfo=UTC) and args.users == [5, 6]
    assert not args.direct and args.func.__module__ == "ops.lifecycle_cmd"
    plain = build_parser().parse_args(["lifecycle", "run", "--direct"])
    assert plain.now is None and plain.users is None and plain.direct


def test_a_bad_clock_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["lifecycle", "run", "--now", "next tuesday"])
    assert exc.value.code == 2
    assert "ISO 8601" in capsys.readouterr().err


class _Node(BaseHTTPRequestHandler):
    answers: list[tuple[int, dict]] = []
    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers["content-length"])
        self.seen.append({"path": self.path, "body": json.loads(self.rfile.read(length))})
        status, body = self.answers.pop(0)
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def node() -> Iterator[Settings]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Node)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Node.answers, _Node.seen = [], []
    yield Settings(api_port=server.server_address[1])
    server.shutdown()


def test_the_pass_runs_in_the_node_when_one_answers(node, capsys) -> None:
    summary = {"archived": 3, "purged": 1}
    _Node.answers.append((200, {"code": 0, "msg": "ok", "data": summary}))
    now = datetime(2026, 4, 1, 10, tzinfo=timezone(timedelta(hours=2)))
    args = build_parser().parse_args(["lifecycle", "run", "--now", now.isoformat(), "--user", "9"])
    assert execute(node, args) == 0
    assert json.loads(capsys.readouterr().out) == summary
    sent = _Node.seen[0]
    assert sent["path"] == "/admin/v1/lifecycle/run" and sent["body"]["users"] == [9]
    assert datetime.fromisoformat(sent["body"]["now"]) == now


def test_a_node_error_is_reported_with_a_non_zero_exit(node, capsys) -> None:
    _Node.answers.append((401, {"code": 40101, "msg": "loopback only"}))
    args = build_parser().parse_args(["lifecycle", "run"])
    assert execute(node, args) == 1
    assert "40101" in capsys.readouterr().err


def test_no_node_is_told_apart_from_a_failing_one() -> None:
    with pytest.raises(NodeUnreachable):
        via_node(Settings(api_port=free_port()), datetime.now(UTC), None, timeout=2)
