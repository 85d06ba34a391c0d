"""A logged exception names its type and place, never its message (which may quote
memory content or model output)."""

from __future__ import annotations

import logging

from core.logs import JsonFormatter, describe_error

SECRET = "my locker code is 90210"


def _fail() -> None:
    try:
        raise KeyError(SECRET)
    except KeyError as exc:
        raise ValueError(f"could not store {SECRET!r}") from exc


def test_describe_error_keeps_type_place_and_cause_only() -> None:
    try:
        _fail()
    except ValueError as exc:
        described = describe_error(exc)
    assert described["error"] == "ValueError" and described["cause"] == "KeyError"
    assert "_fail" in described["where"] and "test_logs_no_content.py" in described["where"]
    assert SECRET not in str(described)

    record = logging.LogRecord("t", logging.ERROR, __file__, 1, "failed", None, None)
    record.fields = described
    assert SECRET not in JsonFormatter().format(record)


def test_describe_error_reaches_the_first_error_of_a_chain() -> None:
    """What Bytewax raises for a failed step: wrappers around the step's own error."""
    try:
        try:
            _fail()
        except ValueError as inner:
            raise RuntimeError("error calling `mapper` in step ...") from inner
    except RuntimeError as exc:
        described = describe_error(exc)
    assert described["error"] == "RuntimeError" and described["cause"] == "KeyError"
    assert "_fail" in described["cause_where"] and SECRET not in str(described)
