"""The client's pure parts (reading answers, Retry-After, bodies) and its retry decisions,
over httpx's in-process ``MockTransport`` where an answer must be scripted (a 503 the
real API gives only while a store is down)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from memstream import AsyncClient, Client, RetryPolicy, TaskPending, TransportError
from memstream._transport import Call, answer_of, body_of, retry_after_s
from memstream.errors import ExtractionFailed, NotFound, ProtocolError, Unavailable
from memstream.schemas.enums import Level
from memstream.schemas.events import Message
from memstream.schemas.responses import Switched

FAST = RetryPolicy(max_attempts=3, backoff_s=0.001, max_backoff_s=0.001)


def _answer(status: int, code: int, data=None, headers=None, msg="m") -> httpx.Response:
    body = {"code": code, "msg": msg, "trace_id": "tr1", "data": data}
    return httpx.Response(status, json=body, headers=headers)


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after_s("3") == 3.0
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= retry_after_s(soon) <= 30
    past = format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    assert retry_after_s(past) == 0.0
    assert retry_after_s("soon") is None and retry_after_s(None) is None


def test_an_answer_is_its_model_or_its_codes_exception() -> None:
    call = Call("POST", "/memory/v1/switch", {}, Switched, request_id="r1")
    ok = answer_of(call, _answer(200, 0, {"user_id": 7, "app_id": None, "enabled": False}))
    assert ok == Switched(user_id=7, enabled=False)
    with pytest.raises(NotFound) as missing:
        answer_of(call, _answer(404, 40401, msg="memory 'm1' not found"))
    err = missing.value
    assert (err.code, err.msg, err.trace_id, err.http_status) == (
        40401,
        "memory 'm1' not found",
        "tr1",
        404,
    )
    assert err.request_id == "r1"  # the call's idempotency key
    headers = {"Retry-After": "2"}
    with pytest.raises(Unavailable) as down:
        answer_of(call, _answer(503, 50301, {"request_id": "cmd_9"}, headers))
    assert down.value.request_id == "cmd_9" and down.value.retry_after == 2.0


@pytest.mark.parametrize(
    "resp",
    [
        httpx.Response(502, text="<html>Bad Gateway</html>"),
        httpx.Response(404, json={"detail": "Not Found"}),  # not an envelope: no code
    ],
)
def test_an_answer_that_is_not_an_envelope_is_a_protocol_error(resp) -> None:
    with pytest.raises(ProtocolError) as bad:
        answer_of(Call("GET", "/x", None, None), resp)
    assert bad.value.http_status == resp.status_code


def test_a_body_leaves_out_none_and_writes_json_values() -> None:
    when = datetime(2025, 1, 31, 12, tzinfo=UTC)
    body = body_of(
        user_id=1,
        level=Level.APP,
        expire_at=when,
        scope={"app_id": None, "session_id": "s"},
        messages=[Message(role="user", content="hi"), {"role": "user", "content": "yo"}],
        app_id=None,
    )
    assert body == {
        "user_id": 1,
        "level": "APP",
        "expire_at": "2025-01-31T12:00:00Z",
        "scope": {"session_id": "s"},
        "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "yo"}],
    }


class Script:
    """Answers in order, recording each request's body."""

    def __init__(self, *answers: httpx.Response):
        self.answers = list(answers)
        self.bodies: list[dict] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content) if request.content else {})
        return self.answers.pop(0)


def _client(script: Script, **kwargs) -> Client:
    http = httpx.Client(base_url="http://api", transport=httpx.MockTransport(script))
    return Client(http=http, retry=FAST, **kwargs)


def test_a_write_retried_after_503_resends_the_same_request_id() -> None:
    script = Script(
        _answer(503, 50301, {"request_id": "x"}, {"Retry-After": "0"}),
        _answer(200, 0, {"memory_id": "m1", "duplicate": False}),
    )
    with _client(script, api_key="msk_k") as memory:
        added = memory.add_structured(7, "I like tea")
    assert added.memory_id == "m1"
    first, second = script.bodies
    assert first == second and first["request_id"].startswith("c_")


def test_starting_an_export_is_not_resent_after_503() -> None:
    script = Script(_answer(503, 50301), _answer(200, 0, {"export_id": "x", "status": "running"}))
    with _client(script) as memory, pytest.raises(Unavailable):
        memory.export(7)
    assert len(script.bodies) == 1


def test_503_is_retried_up_to_max_attempts_then_raised() -> None:
    script = Script(*[_answer(503, 50301, headers={"Retry-After": "0"})] * 3)
    with _client(script) as memory, pytest.raises(Unavailable):
        memory.recall(7, "tea")
    assert len(script.bodies) == FAST.max_attempts


def test_wait_task_raises_a_failed_adds_code_and_gives_up_on_a_pending_one() -> None:
    failed = {"task_id": "t1", "status": "failed", "code": 50001, "reason": "LLM output"}
    script = Script(
        _answer(200, 0, {"task_id": "t1", "status": "accepted"}), _answer(200, 0, failed)
    )
    with _client(script) as memory, pytest.raises(ExtractionFailed) as bad:
        memory.wait_task("t1", every_s=0.001)
    assert bad.value.code == 50001 and "LLM output" in bad.value.msg
    pending = Script(*[_answer(200, 0, {"task_id": "t2", "status": "accepted"})] * 100)
    with _client(pending) as memory, pytest.raises(TaskPending) as late:
        memory.wait_task("t2", timeout_s=0.05, every_s=0.01)
    assert late.value.task_id == "t2" and late.value.status == "accepted"


def test_the_async_client_retries_the_same_way() -> None:
    script = Script(
        _answer(429, 42910, headers={"Retry-After": "0"}),
        _answer(200, 0, {"hit": False, "memories": []}),
    )

    async def run():
        http = httpx.AsyncClient(base_url="http://api", transport=httpx.MockTransport(script))
        async with AsyncClient(http=http, retry=FAST) as memory:
            return await memory.recall(7, "tea", app_id="a")

    found = asyncio.run(run())
    assert found.hit is False and len(script.bodies) == 2
    assert script.bodies[0] == {
        "user_id": 7,
        "query": "tea",
        "scope": {"app_id": "a"},
        "filter": {},
    }


def test_the_client_package_imports_nothing_of_the_server() -> None:
    """The import direction (docs/architecture.md#code-layout): ``memstream`` may use
    ``memstream.schemas`` only, so an agent can install it without the server's stores and models."""
    import subprocess
    import sys

    probe = (
        "import sys, memstream, memstream.mcp_server; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'core', 'models', 'sinks', 'dataflows', 'recall_api', 'ops'}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_connection_never_made_is_retried_and_a_read_timeout_is_not() -> None:
    calls: list[str] = []

    def flaky(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) == 1:
            raise httpx.ConnectError("refused", request=request)
        if len(calls) == 2:
            return _answer(200, 0, {"user_id": 7, "enabled": True})
        raise httpx.ReadTimeout("slow", request=request)

    http = httpx.Client(base_url="http://api", transport=httpx.MockTransport(flaky))
    with Client(http=http, retry=FAST) as memory:
        assert memory.switch(7, True).enabled
        with pytest.raises(TransportError) as slow:
            memory.delete(7, "m1", request_id="r-del")
    assert len(calls) == 3 and slow.value.request_id == "r-del"  # resend with it
