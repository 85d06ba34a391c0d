"""Which failures a record's data causes (DLQ) and which the infrastructure's (restart)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from dataflows.ingest.flow import _key_user
from dataflows.ingest.guard import describe, guarded, is_data_error
from sinks.errors import StoreUnavailable


@pytest.mark.parametrize(
    "exc",
    [OverflowError("date value out of range"), ValueError("x"), KeyError("k"), TypeError("t")],
)
def test_errors_of_a_record_are_data_errors(exc: Exception) -> None:
    assert is_data_error(exc)


@pytest.mark.parametrize(
    "exc",
    [
        StoreUnavailable("ClickHouse did not answer"),
        ConnectionRefusedError(111, "refused"),
        TimeoutError("slow"),
        KafkaException(KafkaError(KafkaError._TRANSPORT)),
        RuntimeError("something else"),
    ],
)
def test_errors_of_the_infrastructure_are_not(exc: Exception) -> None:
    assert not is_data_error(exc)


def test_a_data_error_becomes_the_fallback_with_a_reason_that_quotes_no_content() -> None:
    def fails() -> int:
        raise ValueError("the secret words of the user")

    got = guarded("extract", fails, lambda reason: reason)
    assert got.startswith("extract failed on this input: ValueError at ")
    assert "test_guard.py" in got and "(fails)" in got
    assert "secret" not in got


def test_an_infrastructure_error_still_raises() -> None:
    def fails() -> int:
        raise StoreUnavailable("Milvus did not answer")

    with pytest.raises(StoreUnavailable):
        guarded("write", fails, lambda reason: 0)


def test_success_passes_through() -> None:
    assert guarded("write", lambda: 7, lambda reason: 0) == 7


def test_describe_without_a_traceback() -> None:
    assert describe("embed", OverflowError()) == "embed failed on this input: OverflowError"


@pytest.mark.parametrize(
    ("key", "user"),
    [
        (b"42", 42),
        (b"18446744073709551615", 2**64 - 1),
        (b"-5", None),
        (b"+5", None),
        (b" 5", None),
        (b"5_0", None),
        (b"18446744073709551616", None),
        ("٥".encode(), None),
        (b"", None),
        (None, None),
    ],
)
def test_a_kafka_key_names_a_user_only_as_plain_decimal_digits(key, user) -> None:
    assert _key_user(key) == user
