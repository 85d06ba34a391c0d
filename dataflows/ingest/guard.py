"""A record that fails for its data goes to the DLQ; the flow goes on
(docs/operations.md#the-dead-letter-queue).

An exception inside a Bytewax step stops the worker, and the runner restarts the flow
from its last snapshot: the same record fails again, and every user's writes wait
(a crash loop is an outage for all). So each per-record step runs under ``guarded``:
an error of the record's *data* (a value no code path expected: ``ValueError``,
``OverflowError``, ``KeyError`` …) becomes a Rejected for that record — to
`memory.dlq` with the reason, its task ``failed`` — while an error of the
*infrastructure* (a store or the broker not answering) still raises, so the flow
retries and restarts as before and nothing is lost.

Reasons name the step, the exception type and where it was raised, never the content
(an exception's message may quote it). They are counted where every DLQ'd input is:
``memstream_dataflow_events_total{outcome="dlq"}`` and ``{outcome="failed"}``.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaException

from sinks.errors import StoreError

log = logging.getLogger(__name__)
T = TypeVar("T")

# What a record's data can raise in our code. Anything else (a driver's own error class,
# an OSError) is the infrastructure's and keeps the restart-and-retry path.
DATA_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,  # also UnicodeError, json and pydantic validation errors, DecryptionError
    ArithmeticError,  # OverflowError of a date out of range, ZeroDivisionError
    LookupError,  # KeyError, IndexError
    TypeError,
    AttributeError,
    RecursionError,
    AssertionError,
)
INFRA_ERRORS: tuple[type[BaseException], ...] = (StoreError, OSError, KafkaException)


def is_data_error(exc: BaseException) -> bool:
    """True when ``exc`` is about the record being processed, not a backend."""
    return isinstance(exc, DATA_ERRORS) and not isinstance(exc, INFRA_ERRORS)


def describe(step: str, exc: BaseException) -> str:
    """The DLQ reason: the step, the exception type and the frame that raised it."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        module = last.filename.rsplit("/", 2)
        where = f" at {'/'.join(module[-2:])}:{last.lineno} ({last.name})"
    return f"{step} failed on this input: {type(exc).__name__}{where}"


def guarded(step: str, fn: Callable[[], T], on_data_error: Callable[[str], T]) -> T:
    """``fn()``; a data error becomes ``on_data_error(reason)``, anything else raises."""
    try:
        return fn()
    except Exception as exc:
        if not is_data_error(exc):
            raise
        reason = describe(step, exc)
        log.warning("input refused by a step", extra={"fields": {"reason": reason}})
        return on_data_error(reason)
