"""The adapters' retry policy, written once: a model's HTTP call (``models.http``) and the
Milvus write (``sinks.memory_store``) retry through it.

tenacity drives it: at most ``attempts`` tries; after the n-th failure a wait of
``backoff_s * 2**(n-1)`` seconds, or the server's own hint when ``hint`` finds one on the
error (a ``Retry-After``), never more than ``max_wait_s``; ``backoff_s <= 0`` never waits
(tests). Only errors ``retry_on`` accepts are retried (by default any ``Exception``); the last error is raised as it
was, not wrapped. Each failure before a retry is logged with its type and place
(``describe_error``), never its message: messages can quote memory content.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from core.logs import describe_error


def retrying(
    *,
    attempts: int,
    backoff_s: float,
    retry_on: Callable[[BaseException], bool] = lambda exc: isinstance(exc, Exception),
    logger: logging.Logger,
    message: str,
    max_wait_s: float = 8.0,
    hint: Callable[[BaseException], float | None] | None = None,
    fields: Mapping[str, object] | None = None,
) -> Retrying:
    """The policy as a tenacity ``Retrying``: ``policy(fn, *args)`` calls ``fn`` until it
    returns, fails with an error not worth retrying, or has used its ``attempts``. One
    object serves every thread (tenacity keeps a call's state thread-local)."""

    def wait(state: RetryCallState) -> float:
        if backoff_s <= 0:
            return 0.0
        exc = state.outcome.exception() if state.outcome else None
        told = hint(exc) if hint is not None and exc is not None else None
        pause = told if told is not None else backoff_s * 2 ** (state.attempt_number - 1)
        return min(pause, max_wait_s)

    def log_retry(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        described = describe_error(exc) if exc is not None else {}
        logger.warning(
            message,
            extra={"fields": {**(fields or {}), "attempt": state.attempt_number, **described}},
        )

    return Retrying(
        stop=stop_after_attempt(max(1, attempts)),
        retry=retry_if_exception(retry_on),
        wait=wait,
        before_sleep=log_retry,
        reraise=True,
    )
