"""What the sync and the async client share, written once: a call's description, its
request, the reading of its answer, and the retry policy.

A ``Call`` says what to send and how to read the answer; ``request_of`` builds the httpx
request and ``answer_of`` reads the envelope (``data`` into the call's model, any other
``code`` into its exception). The only I/O is ``send`` in each client (one line each).

Retries use tenacity (maintained; one policy object drives both ``Retrying`` and
``AsyncRetrying``, so sync and async retry alike). Retried: 429 (42910: the rate limiter
refuses before anything runs, so always safe), a connection that could not be made
(nothing was sent) and 503 (50301: a store or the broker did not answer) unless the call
is not idempotent (starting an export). A write is made
idempotent by its ``request_id``, drawn once per call before the first attempt and sent
with every retry: the API turns it into the add's task id or the command id, so a resend
never writes twice (docs/api.md#retrying-and-idempotent-writes-request_id). Each wait is at
least the server's ``Retry-After``; a call gives up after ``max_attempts`` or when the next
wait would end past ``budget_s``, raising the last error.
"""

from __future__ import annotations

import abc
import json
import logging
import math
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Generic, NoReturn, TypedDict, TypeVar, cast

import httpx
from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from tenacity import (
    RetryCallState,
    retry_if_exception,
    retry_if_result,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential_jitter,
)
from tenacity.retry import retry_base
from tenacity.stop import stop_base

from memstream.errors import ApiError, ProtocolError, TaskPending, TransportError, error_for
from memstream.schemas.api import Envelope
from memstream.schemas.json_types import JsonObject, JsonValue

log = logging.getLogger("memstream.client")
T = TypeVar("T")
V1 = "/memory/v1"
ROUTE_HEADER = "X-Memstream-User"  # the body's user, for a balancer hashing on users
USER_AGENT = "memstream-client/0.1"


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one call tries: ``max_attempts`` in all, waiting at least the server's
    ``Retry-After`` (else an exponential, jittered backoff from ``backoff_s`` up to
    ``max_backoff_s``), never waiting past ``budget_s`` from the first attempt."""

    max_attempts: int = 4
    budget_s: float = 30.0
    backoff_s: float = 0.2
    max_backoff_s: float = 5.0


NO_RETRY = RetryPolicy(max_attempts=1)


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API call: ``model`` reads ``data`` (``None``: the raw JSON, ``"ndjson"``: the
    lines of a download); ``until`` makes it a poll (repeat while it is false, at most
    ``poll_s`` seconds, every ``poll_every_s``)."""

    method: str
    path: str
    body: JsonObject | None = None
    model: type[T] | str | None = None
    request_id: str | None = None
    idempotent: bool = True
    until: Callable[[T], bool] | None = None
    poll_s: float = 60.0
    poll_every_s: float = 0.2
    check: Callable[[T], None] | None = None  # may raise on a settled answer (a failed task)
    part: str | None = None  # ``model`` reads ``data[part]`` (``items/get``'s ``item``)
    none_if_missing: bool = False  # 40401 answers None (a lookup by key: absent is an answer)


def new_request_id() -> str:
    return f"c_{uuid.uuid4().hex}"


def body_of(**fields: object) -> JsonObject:
    """A JSON body: enums as their values, models as their JSON, ``None`` left out (an
    absent field is the API's default)."""
    rendered: JsonObject = to_jsonable_python(fields, exclude_none=True)
    return {k: _drop_none(v) for k, v in rendered.items() if v is not None}


def to_json(value: object) -> JsonValue:
    """``value`` as JSON exactly (a ``None`` inside it kept: an item's value is the
    caller's)."""
    return cast(JsonValue, to_jsonable_python(value))


def _drop_none(value: JsonValue) -> JsonValue:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def request_of(http: httpx.Client | httpx.AsyncClient, call: Call, headers: Mapping[str, str]):
    sent = dict(headers)
    user = (call.body or {}).get("user_id")
    if isinstance(user, int) and not isinstance(user, bool):
        sent[ROUTE_HEADER] = str(user)
    return http.build_request(call.method, call.path, json=call.body, headers=sent)


def answer_of(call: Call[T], resp: httpx.Response) -> T:
    """``data`` as the call's model, or the exception of the envelope's code."""
    if call.model == "ndjson" and resp.status_code == 200:
        return [json.loads(line) for line in resp.text.splitlines() if line.strip()]  # type: ignore[return-value]
    try:
        raw = resp.json()
    except ValueError:
        raw = None
    if not isinstance(raw, dict) or not isinstance(raw.get("code"), int):
        raise ProtocolError(
            f"HTTP {resp.status_code} from {call.path} is not a memstream answer: "
            f"{resp.text[:200]!r}",
            resp.status_code,
        )
    env = Envelope[Any].model_validate(raw)
    if env.code == 40401 and call.none_if_missing:
        return cast(T, None)
    if env.code != 0:
        data = env.data
        request_id = data.get("request_id") if isinstance(data, dict) else None
        raise error_for(
            env.code,
            env.msg,
            http_status=resp.status_code,
            trace_id=env.trace_id or resp.headers.get("x-trace-id"),
            request_id=request_id or call.request_id,
            data=data,
            retry_after=retry_after_s(resp.headers.get("retry-after")),
        )
    found: T
    data = env.data
    if call.part is not None and isinstance(data, dict):
        data = data.get(call.part)
    if isinstance(call.model, type) and issubclass(call.model, BaseModel):
        found = call.model.model_validate(data)
    else:
        found = cast(T, data)  # no model: the call's T is the JSON data as it came
    if call.check is not None:
        call.check(found)
    return found


def retry_after_s(value: str | None) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _transient(call: Call) -> Callable[[BaseException], bool]:
    """Worth sending again: a connection never made (nothing was sent), a 429 always, a
    503 if the call is idempotent. Judged by the HTTP status of the answer, so a failed
    task's code (no answer of its own) is never retried."""

    def worth(exc: BaseException) -> bool:
        if isinstance(exc, TransportError):
            return isinstance(exc.__cause__, httpx.ConnectError)
        if not isinstance(exc, ApiError):
            return False
        return exc.http_status == 429 or (exc.http_status == 503 and call.idempotent)

    return worth


class _Wait:
    """At least the server's ``Retry-After``; between polls, the poll interval."""

    def __init__(self, policy: RetryPolicy, poll_every_s: float):
        self.backoff = wait_exponential_jitter(
            multiplier=policy.backoff_s, max=policy.max_backoff_s, jitter=policy.backoff_s
        )
        self.poll_every_s = poll_every_s

    def __call__(self, state: RetryCallState) -> float:
        outcome = state.outcome
        if outcome is None or not outcome.failed:
            return self.poll_every_s
        exc = outcome.exception()
        floor = getattr(exc, "retry_after", None) or 0.0
        return max(self.backoff(state), floor)


def _give_up(state: RetryCallState) -> NoReturn:
    """Out of attempts or time: the last error as it was, or a poll still pending."""
    outcome = state.outcome
    assert outcome is not None
    if outcome.failed:
        raise outcome.exception()  # type: ignore[misc]
    last = outcome.result()
    what: str = getattr(last, "task_id", "") or getattr(last, "export_id", "?")
    raise TaskPending(what, getattr(last, "status", "?"))


def _log_retry(state: RetryCallState) -> None:
    outcome = state.outcome
    if outcome is not None and outcome.failed:
        exc = outcome.exception()
        call = state.args[0] if state.args else None
        log.info(
            "retrying %s in %.2f s after %s",
            getattr(call, "path", "?"),
            state.upcoming_sleep,
            getattr(exc, "code", type(exc).__name__),
        )


class RetryOptions(TypedDict):
    """tenacity's keyword arguments, as ``retry_options`` fills them."""

    retry: retry_base
    stop: stop_base
    wait: _Wait
    retry_error_callback: Callable[[RetryCallState], NoReturn]
    before_sleep: Callable[[RetryCallState], None]


def retry_options(policy: RetryPolicy, call: Call) -> RetryOptions:
    """tenacity's keyword arguments for ``Retrying`` and ``AsyncRetrying`` alike."""
    retry: retry_base = retry_if_exception(_transient(call))
    stop: stop_base = stop_after_attempt(policy.max_attempts) | stop_before_delay(policy.budget_s)
    if call.until is not None:
        until = call.until
        retry = retry | retry_if_result(lambda found: not until(found))
        stop = stop_before_delay(call.poll_s)
    return {
        "retry": retry,
        "stop": stop,
        "wait": _Wait(policy, call.poll_every_s),
        "retry_error_callback": _give_up,
        "before_sleep": _log_retry,
    }


class Runner(abc.ABC):
    """What the endpoint classes build on: ``_run`` sends a call (each client has its
    own), ``_write`` and ``_read`` describe the POSTs of ``/memory/v1``."""

    # ``_run`` gives the call's answer on ``Client`` and an awaitable of it on
    # ``AsyncClient``: no one static type says both (the endpoints, written once,
    # declare the synchronous answer)
    @abc.abstractmethod
    def _run(self, call: Call) -> Any:
        """Send ``call`` with retries: ``Client`` blocking, ``AsyncClient`` awaitable."""

    def _write(self, path: str, model: type, request_id: str | None, **fields: object) -> Any:
        """A write: its idempotency key is fixed here, before the first attempt."""
        rid = request_id or new_request_id()
        body = body_of(**fields, request_id=rid)
        return self._run(Call("POST", f"{V1}/{path}", body, model, request_id=rid))

    def _read(self, path: str, model: type, **fields: object) -> Any:
        return self._run(Call("POST", f"{V1}/{path}", body_of(**fields), model))
