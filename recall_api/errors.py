"""API errors and their one mapping to envelope codes (docs/api.md#error-codes).

ApiError(code, msg) is raised by routes and orchestration; request validation errors
become 40001; a store or broker that does not answer (Redis, Kafka, StoreUnavailable)
becomes 50301 with ``Retry-After``; anything unexpected becomes 50000 with the trace id,
answered by ``CatchAll`` inside the trace middleware, so the envelope carries the trace id
and the connection is kept (an exception escaping to the server would reset it).
Writes that may still land answer 50301 with their ``request_id`` (recall_api.commands).
"""

from __future__ import annotations

import logging

import orjson
import redis
from clickhouse_connect.driver.exceptions import OperationalError as ClickHouseOperationalError
from confluent_kafka import KafkaException
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from pymilvus.exceptions import MilvusUnavailableException
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.logs import describe_error, trace_id_var
from memstream.schemas.api import Envelope as EnvelopeModel
from memstream.schemas.errors import ErrorCode
from sinks.errors import StoreUnavailable

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(
        self, code: ErrorCode, msg: str, data: object = None, retry_after: int | None = None
    ):
        super().__init__(msg)
        self.code = code
        self.msg = msg
        self.data = data
        self.retry_after = retry_after  # seconds, sent as Retry-After (42910)


# A backend that did not answer: the request may be retried (idempotently, for writes).
OUTAGES: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    StoreUnavailable,
    ClickHouseOperationalError,  # a ClickHouse server that cannot be reached
    MilvusUnavailableException,
)
RETRY_AFTER_S = 1


class Envelope(JSONResponse):
    """The envelope rendered by orjson: the same compact UTF-8 text as Starlette's
    ``json.dumps``, on the event loop, which every request shares: a recall's ten
    memories take 0.01 ms instead of 0.11 (the encoder was the loop's largest own cost
    in a profile of ``bench recall``). A value orjson refuses (an integer beyond 64
    bits) falls back to the stdlib; NaN, which the stdlib refused (a 500), is null."""

    def render(self, content: object) -> bytes:
        try:
            return orjson.dumps(content)
        except orjson.JSONEncodeError:
            return super().render(content)


def envelope(
    code: ErrorCode, msg: str, data: object = None, retry_after: int | None = None
) -> JSONResponse:
    body = {"code": int(code), "msg": msg, "trace_id": trace_id_var.get(), "data": data}
    if retry_after is None and code is ErrorCode.UNAVAILABLE:
        retry_after = RETRY_AFTER_S
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return Envelope(body, status_code=code.http_status, headers=headers)


def model_json(model: BaseModel, status_code: int = 200) -> Response:
    """``model`` rendered by pydantic with the fields that were set (an optional field left
    out stays out), with no second validation pass: FastAPI does not apply a route's
    ``response_model`` to a returned Response, the route built the model itself."""
    body = model.__pydantic_serializer__.to_json(model, exclude_unset=True, by_alias=True)
    return Response(body, status_code=status_code, media_type="application/json")


def ok(data: BaseModel, *, traced: bool = False) -> Response:
    """A success answer ``{code: 0, msg: "ok", data}``: the route's ``memstream.schemas.responses``
    model in the envelope. ``traced`` adds the request's ``trace_id`` (recall's answer);
    the other success answers leave it out, as always."""
    answer = EnvelopeModel(code=0, msg="ok", data=data)  # rendered by the data's own type
    if traced:
        answer.trace_id = trace_id_var.get()
    return model_json(answer)


def is_outage(exc: BaseException) -> bool:
    """A backend that did not answer (vs. a bug or a refused request)."""
    if isinstance(exc, OUTAGES):
        return True
    if isinstance(exc, KafkaException) and exc.args:
        err = exc.args[0]
        return bool(getattr(err, "retriable", lambda: False)())
    return isinstance(exc, BufferError)  # the producer's local queue is full


def unavailable(what: str, request_id: str | None = None) -> ApiError:
    """50301; with ``request_id`` for a write the caller may resend without writing twice."""
    if request_id is None:
        return ApiError(ErrorCode.UNAVAILABLE, f"{what} is unavailable; retry shortly")
    return ApiError(
        ErrorCode.UNAVAILABLE,
        f"{what} is unavailable; the write may still land: retry with "
        f"request_id={request_id} (idempotent)",
        {"request_id": request_id},
    )


def unexpected(exc: BaseException) -> JSONResponse:
    """The answer to an error nobody handled: 50301 for an outage, else 50000."""
    if is_outage(exc):
        log.warning("backend unavailable", extra={"fields": describe_error(exc)})
        err = unavailable("a store or the broker")
        return envelope(err.code, err.msg, err.data)
    log.error("unhandled error", extra={"fields": describe_error(exc)})
    return envelope(ErrorCode.INTERNAL, "internal error; quote the trace_id")


class CatchAll:
    """ASGI middleware: an exception the routes did not handle becomes the envelope here,
    inside the trace context (the trace id is set) and without reaching the server."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:  # the last line of defence, by design
            if started:  # headers are out: nothing truthful can be sent any more
                log.error("error after the response started", extra={"fields": describe_error(exc)})
                return
            await unexpected(exc)(scope, receive, send)


class BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` is refused (40001) before it is
    read whole, by its Content-Length or, without one, as soon as the stream passes it."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._refuse()(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise StarletteHTTPException(413, self._msg())
            return message

        await self.app(scope, counted, send)

    def _msg(self) -> str:
        return f"request body exceeds {self.max_bytes} bytes"

    def _refuse(self) -> JSONResponse:
        return envelope(ErrorCode.BAD_PARAMETER, self._msg())


def _describe(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        parts.append(f"{loc or 'body'}: {err.get('msg')}")
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI, max_body_bytes: int | None = None) -> None:
    """The mapping to envelope codes; call before the trace middleware is added, so the
    middlewares installed here run inside it (with the request's trace id)."""
    app.add_middleware(CatchAll)
    if max_body_bytes is not None:
        app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return envelope(exc.code, exc.msg, exc.data, exc.retry_after)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return envelope(ErrorCode.BAD_PARAMETER, _describe(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {
            404: ErrorCode.NOT_FOUND,
            401: ErrorCode.UNAUTHENTICATED,
            405: ErrorCode.BAD_PARAMETER,
        }.get(exc.status_code, ErrorCode.BAD_PARAMETER)
        return envelope(code, str(exc.detail))

    for outage in OUTAGES:
        app.add_exception_handler(outage, _outage)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        return unexpected(exc)  # the fallback for a middleware outside CatchAll


async def _outage(_: Request, exc: Exception) -> JSONResponse:
    return unexpected(exc)
