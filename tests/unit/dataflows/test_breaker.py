"""The poison-pill breaker's accounting: when it turns careful, whom it blames, and never
for an infrastructure error (dataflows.breaker)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import redis

from dataflows.breaker import Breaker, is_data_failure, root_cause
from sinks.errors import StoreUnavailable

PART = ("memory.conversations", 0)


@dataclass
class Msg:
    topic: str
    partition: int
    offset: int


def _wrapped(inner: BaseException) -> BaseException:
    """An exception as Bytewax raises it: its own error caused by the step's."""
    try:
        try:
            raise inner
        except BaseException as exc:
            raise RuntimeError("worker failed") from exc
    except RuntimeError as outer:
        return outer


def _hand(b: Breaker, offset: int) -> Msg:
    msg = Msg(*PART, offset)
    assert b.careful(PART, offset)
    assert b.may_hand()
    b.handed((*PART, offset), msg)
    return msg


def test_root_cause_walks_the_chain_to_the_step_error() -> None:
    exc = _wrapped(UnicodeEncodeError("utf-8", "\ud83d", 0, 1, "surrogates not allowed"))
    assert isinstance(root_cause(exc), UnicodeEncodeError)
    assert is_data_failure(exc)
    assert not is_data_failure(_wrapped(StoreUnavailable("redis: down")))
    assert not is_data_failure(_wrapped(redis.ConnectionError("refused")))


def test_one_data_failure_changes_nothing_the_second_replays_in_flight_one_by_one() -> None:
    b = Breaker("ingest")
    b.was_read(PART, 120)  # the source had read up to offset 119 when the flow failed
    assert b.failed(_wrapped(ValueError("bad"))) == []
    assert not b.is_careful
    assert b.failed(_wrapped(ValueError("bad"))) == []
    assert b.is_careful
    assert b.careful(PART, 100)
    assert b.careful(PART, 119)
    assert not b.careful(PART, 120)  # past the in-flight range: full speed again
    assert not b.is_careful and b.failures == 0


def test_a_careful_failure_blames_the_one_record_out_and_skips_it() -> None:
    b = Breaker("ingest")
    b.was_read(PART, 50)
    b.failed(_wrapped(KeyError("x")))
    b.failed(_wrapped(KeyError("x")))
    first = _hand(b, 40)
    b.done([(*PART, 40)])  # went through: not blamed
    assert b.may_hand()
    poison = _hand(b, 41)
    assert not b.may_hand()  # one at a time
    assert b.failed(_wrapped(TypeError("boom"))) == [poison]
    assert first is not poison
    assert b.skipped(PART, 41) and not b.skipped(PART, 40)
    assert b.skips_from(PART, 30) == [41]
    assert b.skips_from(PART, 42) == []  # a snapshot past it need not carry it


def test_an_infrastructure_failure_never_blames_nor_counts() -> None:
    b = Breaker("ingest")
    b.was_read(PART, 10)
    b.failed(_wrapped(ValueError("x")))
    b.failed(_wrapped(ValueError("x")))
    _hand(b, 3)
    assert b.failed(_wrapped(StoreUnavailable("clickhouse: timeout"))) == []
    assert not b.skip
    assert b.failures == 2


def test_no_blame_when_nothing_or_more_than_one_record_is_out() -> None:
    b = Breaker("ingest", settle_s=0.0)
    b.was_read(PART, 10)
    b.failed(_wrapped(ValueError("x")))
    b.failed(_wrapped(ValueError("x")))
    assert b.failed(_wrapped(ValueError("x"))) == []  # nothing out: a timer, not a record
    _hand(b, 1)
    assert b.may_hand()  # settle_s 0: the record is let go (it may sit in a window)
    assert b.failed(_wrapped(ValueError("x"))) == []
    assert not b.skip


def test_a_record_that_could_not_be_dead_lettered_is_forgiven() -> None:
    b = Breaker("ingest")
    b.was_read(PART, 5)
    b.failed(_wrapped(ValueError("x")))
    b.failed(_wrapped(ValueError("x")))
    msg = _hand(b, 2)
    assert b.failed(_wrapped(ValueError("x"))) == [msg]
    b.forgive([msg])
    assert not b.skipped(PART, 2)


def test_a_restored_skip_list_is_honoured() -> None:
    b = Breaker("ingest")
    b.resumed(PART, [7, 9])
    assert b.skipped(PART, 7) and b.skipped(PART, 9) and not b.skipped(PART, 8)
    assert not b.skipped(("memory.commands", 0), 7)


def test_failures_far_apart_are_not_in_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataflows.breaker as mod

    b = Breaker("ingest")
    now = [1000.0]
    monkeypatch.setattr(mod.time, "monotonic", lambda: now[0])
    b.failed(_wrapped(ValueError("x")))
    now[0] += mod.CONSECUTIVE_S + 1
    b.failed(_wrapped(ValueError("x")))
    assert b.failures == 1 and not b.is_careful
