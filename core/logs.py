"""Structured JSON logs with trace ids.

Each record is one JSON object per line with the trace id of the request or task that
produced it (a context variable, so async handlers and dataflow steps each keep their
own). Memory content is never logged: log ids, counts and reasons only.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
import traceback
import uuid
from pathlib import Path

trace_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("trace_id", default="")


def new_trace_id() -> str:
    return uuid.uuid4().hex[:16]


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            "trace_id": getattr(record, "trace_id", None) or trace_id_var.get(),
        }
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict):
            out.update(extra)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def setup_logging(level: str = "INFO", as_json: bool = True) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if as_json:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "urllib3", "kafka", "pymilvus", "milvus_lite", "faiss"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))


def log_fields(**fields: object) -> dict[str, dict[str, object]]:
    """`logger.info("msg", extra=log_fields(user_id=1, count=3))`."""
    return {"fields": fields}


def describe_error(exc: BaseException) -> dict[str, str]:
    """An exception for a log line without its message: messages of validation, store and
    model errors can quote what they were given (memory content, model output), so a log
    names the type and where it was raised, never what it said. ``cause`` is the first
    error of the chain (Bytewax wraps a step's exception in two ``BytewaxRuntimeError``
    whose text is the whole traceback), with where it was raised."""
    out = {"error": type(exc).__name__, "where": _where(exc)}
    root, seen = exc, {id(exc)}
    while (nxt := root.__cause__ or root.__context__) is not None and id(nxt) not in seen:
        root = nxt
        seen.add(id(root))
    if root is not exc:
        out["cause"] = type(root).__name__
        out["cause_where"] = _where(root)
    return out


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-6:] if exc.__traceback__ else []
    return " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
