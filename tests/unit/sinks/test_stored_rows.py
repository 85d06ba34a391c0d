"""Stored rows read one at a time: an instant past what Python holds is read at the store
range's end, a row that cannot be decoded is skipped; both counted (issue 31)."""

from __future__ import annotations

import logging

from prometheus_client import REGISTRY

from core.timeutil import epoch_ms
from memstream.schemas.limits import STORE_TIME_MAX, STORE_TIME_MIN
from sinks.stored_rows import decode_rows, instant, select_list

SECRET = "my locker code is 90210"


def _count(action: str) -> float:
    name = "memstream_store_rows_undecodable_total"
    return REGISTRY.get_sample_value(name, {"action": action}) or 0.0


def test_time_columns_are_selected_as_epoch_ms_under_names_of_their_own() -> None:
    assert select_list(["memory_id", "expire_at"]) == (
        "memory_id, toUnixTimestamp64Milli(expire_at) AS expire_at__ms"
    )


def test_an_instant_beyond_year_9999_reads_as_the_store_range_end(caplog) -> None:
    before = _count("clamped")
    year_10000 = 253402304399000  # what ClickHouse returned for 9999-12-31T23:59:59-01:00
    row = {"memory_id": "m_1", "content": SECRET, "expire_at__ms": year_10000}
    with caplog.at_level(logging.WARNING):
        assert instant(row, "expire_at") == STORE_TIME_MAX
        assert instant({"memory_id": "m_2", "x__ms": -62135600400000}, "x") == STORE_TIME_MIN
    assert _count("clamped") == before + 2
    assert SECRET not in caplog.text
    ok = epoch_ms(STORE_TIME_MAX)
    assert instant({"t__ms": ok}, "t") == STORE_TIME_MAX
    assert instant({"t__ms": None}, "t") is None


def test_a_row_that_cannot_be_decoded_is_skipped_and_counted(caplog) -> None:
    before = _count("skipped")
    rows = [{"memory_id": "m_ok", "n": "1"}, {"memory_id": "m_bad", "n": SECRET}]
    with caplog.at_level(logging.ERROR):
        assert decode_rows(rows, lambda r: int(r["n"])) == [1]
    assert _count("skipped") == before + 1
    assert "m_bad" in str([getattr(r, "fields", None) for r in caplog.records])
    assert SECRET not in caplog.text
