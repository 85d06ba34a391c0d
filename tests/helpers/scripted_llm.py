"""A scripted OpenAI-compatible HTTP server on a real socket (127.0.0.1, free port).

Tests queue answers (status, JSON or raw text, delay) and read back every request the
adapter sent, so the adapters are checked on the wire, not by patching internals.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    status: int = 200
    body: Any = None  # dict/list → JSON, str → raw text
    delay: float = 0.0


@dataclass
class Scripted:
    url: str
    answers: deque[Answer] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def push(self, body: Any = None, status: int = 200, delay: float = 0.0) -> None:
        self.answers.append(Answer(status, body, delay))

    def push_chat(self, content: str | dict[str, Any], **kw: Any) -> None:
        """Queue a chat completion whose message content is ``content`` (dict → JSON)."""
        text = json.dumps(content, ensure_ascii=False) if isinstance(content, dict) else content
        body = {
            "id": "x",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
        self.push(body, **kw)

    def sent_text(self, i: int = -1) -> str:
        """All message contents of request ``i``, joined (what the model would read)."""
        return "\n".join(m["content"] for m in self.requests[i]["json"]["messages"])


class _Handler(BaseHTTPRequestHandler):
    script: Scripted

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with self.script.lock:
            self.script.requests.append(
                {"path": self.path, "headers": dict(self.headers), "json": json.loads(raw)}
            )
            answer = (
                self.script.answers.popleft()
                if self.script.answers
                else Answer(500, {"error": "no scripted answer left"})
            )
        time.sleep(answer.delay)
        body = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
        data = body.encode()
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def scripted_server() -> Iterator[Scripted]:
    """Serve a Scripted on 127.0.0.1 (free port) for the duration of the block."""
    handler = type("Handler", (_Handler,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    script = Scripted(url=f"http://127.0.0.1:{server.server_address[1]}")
    handler.script = script
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
