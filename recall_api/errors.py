"""API errors and their one mapping to envelope codes (DESIGN §6).

ApiError(code, msg) is raised by routes and orchestration; request validation errors
become 40001; anything unexpected becomes 50000 with the trace id, never a bare 500 page.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from core.logs import trace_id_var
from schemas.errors import ErrorCode

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, code: ErrorCode, msg: str, data: object = None):
        super().__init__(msg)
        self.code = code
        self.msg = msg
        self.data = data


def envelope(code: ErrorCode, msg: str, data: object = None) -> JSONResponse:
    body = {"code": int(code), "msg": msg, "trace_id": trace_id_var.get(), "data": data}
    return JSONResponse(body, status_code=code.http_status)


def _describe(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        parts.append(f"{loc or 'body'}: {err.get('msg')}")
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return envelope(exc.code, exc.msg, exc.data)

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

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error", exc_info=exc)
        return envelope(ErrorCode.INTERNAL, "internal error; quote the trace_id")
