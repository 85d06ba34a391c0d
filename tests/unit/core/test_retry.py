"""core.retry: the one retry policy of the adapters (tries, waits, hints, what it retries)."""

from __future__ import annotations

import logging

import pytest

from core.retry import retrying

log = logging.getLogger("test.retry")


class Flaky:
    """Fails ``failures`` times with ``error``, then answers ``"ok"``."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "ok"


def policy(sleeps: list[float], **kw: object):
    kw = {"attempts": 4, "backoff_s": 0.1, "logger": log, "message": "failed"} | kw
    return retrying(**kw).copy(sleep=sleeps.append)  # type: ignore[arg-type]


def test_retries_until_it_answers_waiting_twice_as_long_each_time():
    sleeps: list[float] = []
    fn = Flaky(3, OSError("down"))
    assert policy(sleeps)(fn) == "ok"
    assert fn.calls == 4
    assert sleeps == pytest.approx([0.1, 0.2, 0.4])


def test_gives_up_after_its_attempts_raising_the_last_error_unwrapped():
    sleeps: list[float] = []
    fn = Flaky(10, OSError("down"))
    with pytest.raises(OSError, match="down"):
        policy(sleeps, attempts=3)(fn)
    assert fn.calls == 3
    assert len(sleeps) == 2  # no wait after the last try


def test_an_error_it_does_not_retry_is_raised_at_once():
    sleeps: list[float] = []
    fn = Flaky(1, ValueError("bad request"))
    with pytest.raises(ValueError):
        policy(sleeps, retry_on=lambda e: isinstance(e, OSError))(fn)
    assert fn.calls == 1 and sleeps == []


def test_a_server_hint_replaces_the_backoff_and_every_wait_is_capped():
    sleeps: list[float] = []
    fn = Flaky(2, OSError("slow down"))
    calls = iter([2.5, 100.0])
    policy(sleeps, hint=lambda e: next(calls), max_wait_s=8.0)(fn)
    assert sleeps == [2.5, 8.0]


def test_no_backoff_never_waits_even_when_the_server_hints():
    sleeps: list[float] = []
    policy(sleeps, backoff_s=0, hint=lambda e: 5.0)(Flaky(2, OSError("down")))
    assert sleeps == [0.0, 0.0]


def test_each_retry_is_logged_with_the_error_type_never_its_message(caplog):
    caplog.set_level(logging.WARNING, logger="test.retry")
    sleeps: list[float] = []
    policy(sleeps, fields={"url": "http://m"})(Flaky(1, OSError("user said: secret")))
    (record,) = caplog.records
    fields = record.fields  # type: ignore[attr-defined]
    assert fields["url"] == "http://m" and fields["attempt"] == 1
    assert fields["error"] == "OSError"
    assert "secret" not in str(fields) and "secret" not in record.getMessage()


def test_keyboard_interrupt_is_not_retried_by_default():
    sleeps: list[float] = []
    fn = Flaky(1, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        policy(sleeps)(fn)
    assert fn.calls == 1
