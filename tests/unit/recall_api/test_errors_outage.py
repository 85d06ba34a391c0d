"""Which exceptions are a backend that did not answer (50301, retry) and which are bugs."""

from __future__ import annotations

import pytest
import redis
from clickhouse_connect.driver.exceptions import OperationalError
from confluent_kafka import KafkaError, KafkaException
from pymilvus.exceptions import MilvusUnavailableException

from recall_api.errors import is_outage, unavailable
from sinks.errors import StoreUnavailable

CASES = [
    (redis.ConnectionError("refused"), True),
    (redis.TimeoutError("slow"), True),
    (StoreUnavailable("kafka queue full"), True),
    (OperationalError("no route"), True),
    (MilvusUnavailableException(), True),
    (BufferError("queue full"), True),
    (KafkaException(KafkaError(KafkaError._TRANSPORT, retriable=True)), True),
    (KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)), False),
    (redis.ResponseError("WRONGTYPE"), False),
    (RuntimeError("bug"), False),
    (RecursionError(), False),
]


@pytest.mark.parametrize(("exc", "outage"), CASES, ids=[type(e).__name__ for e, _ in CASES])
def test_is_outage(exc: Exception, outage: bool) -> None:
    assert is_outage(exc) is outage


def test_a_write_that_may_land_names_its_request_id() -> None:
    err = unavailable("Redis", "req-1")
    assert err.code == 50301 and err.data == {"request_id": "req-1"} and "req-1" in err.msg
    assert unavailable("Redis").data is None
