"""Exceptions of the memstream client, one per API error code.

    MemstreamError                  anything this client raises
    ├── TransportError              no answer (httpx's error is the cause; ``request_id``)
    ├── ProtocolError               the answer is not memstream's envelope (a proxy's page)
    ├── TaskPending                 ``wait_task``/``wait_export`` ran out of time (not failed)
    └── ApiError                    the API answered ``code`` != 0 (``code``, ``msg``,
        │                           ``trace_id``, ``request_id``, ``data``, ``http_status``)
        ├── BadRequest              40001
        ├── Unauthenticated         40101 (missing, unknown or revoked key; or not allowed)
        ├── SwitchedOff             40301 (the user's or the app's memory is switched off)
        ├── CrossAppClosed          40302
        ├── NotFound                40401
        ├── RequestConflict         40901 (``request_id`` reused with another request)
        ├── CapacityFull            42901
        ├── ImportantLimit          42902
        ├── RateLimited             42910 (``retry_after`` seconds)
        ├── InternalError           50000
        ├── ExtractionFailed        50001
        ├── Unavailable             50301 (``request_id``: resend it, the write is idempotent)
        └── RecallTimeout           50401

``error_for`` is the one place a code becomes a class; a code this client does not know
yet is a plain ``ApiError``.
"""

from __future__ import annotations

from typing import TypedDict, Unpack

from memstream.schemas.errors import ErrorCode
from memstream.schemas.json_types import JsonValue


class MemstreamError(Exception):
    """Base of every exception of ``memstream``."""


class TransportError(MemstreamError):
    """The request got no answer (connection refused, reset, timed out). A write may
    still have landed: resend it with ``request_id`` and it is applied once."""

    def __init__(self, msg: str, request_id: str | None = None):
        super().__init__(msg)
        self.request_id = request_id


class ProtocolError(MemstreamError):
    """The server answered something that is not a memstream envelope."""

    def __init__(self, msg: str, http_status: int):
        super().__init__(msg)
        self.http_status = http_status


class TaskPending(MemstreamError):
    """A wait (``wait_task``, ``wait_export``) gave up while the work was still going on."""

    def __init__(self, task_id: str, status: str):
        super().__init__(f"{task_id} still {status} when the wait ran out")
        self.task_id = task_id  # the task's (or the export's) id
        self.status = status


class ApiError(MemstreamError):
    """The API refused or failed the request; ``code`` is the envelope's
    (docs/api.md#error-codes)."""

    def __init__(
        self,
        code: int,
        msg: str,
        *,
        http_status: int = 0,
        trace_id: str | None = None,
        request_id: str | None = None,
        data: JsonValue = None,
        retry_after: float | None = None,
    ):
        super().__init__(f"{code}: {msg}" + (f" (trace_id {trace_id})" if trace_id else ""))
        self.code = code
        self.msg = msg
        self.http_status = http_status
        self.trace_id = trace_id
        self.request_id = request_id  # the write's idempotency key: resend with it
        self.data = data
        self.retry_after = retry_after  # seconds, from Retry-After


class BadRequest(ApiError):
    pass


class Unauthenticated(ApiError):
    pass


class SwitchedOff(ApiError):
    pass


class CrossAppClosed(ApiError):
    pass


class NotFound(ApiError):
    pass


class RequestConflict(ApiError):
    """The request_id was used before for a different request; nothing changed."""


class CapacityFull(ApiError):
    pass


class ImportantLimit(ApiError):
    pass


class RateLimited(ApiError):
    pass


class InternalError(ApiError):
    pass


class ExtractionFailed(ApiError):
    pass


class Unavailable(ApiError):
    pass


class RecallTimeout(ApiError):
    pass


_BY_CODE: dict[int, type[ApiError]] = {
    ErrorCode.BAD_PARAMETER: BadRequest,
    ErrorCode.UNAUTHENTICATED: Unauthenticated,
    ErrorCode.SWITCHED_OFF: SwitchedOff,
    ErrorCode.CROSS_APP_CLOSED: CrossAppClosed,
    ErrorCode.NOT_FOUND: NotFound,
    ErrorCode.REQUEST_CONFLICT: RequestConflict,
    ErrorCode.CAPACITY_FULL: CapacityFull,
    ErrorCode.IMPORTANT_LIMIT: ImportantLimit,
    ErrorCode.RATE_LIMITED: RateLimited,
    ErrorCode.INTERNAL: InternalError,
    ErrorCode.EXTRACTION_FAILED: ExtractionFailed,
    ErrorCode.UNAVAILABLE: Unavailable,
    ErrorCode.RECALL_TIMEOUT: RecallTimeout,
}


class Details(TypedDict, total=False):
    """What an answer tells beside its code and message (``ApiError``'s keywords)."""

    http_status: int
    trace_id: str | None
    request_id: str | None
    data: JsonValue
    retry_after: float | None


def error_for(code: int, msg: str, **details: Unpack[Details]) -> ApiError:
    """The exception of an envelope whose ``code`` is not 0."""
    return _BY_CODE.get(code, ApiError)(code, msg, **details)
