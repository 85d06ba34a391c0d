"""core.record_codec: the bytes are the compact JSON of the record's values, whichever
encoder wrote them, and decode to the same record."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta

from core import record_codec
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.memory import EntityLink, MemoryRecord

AT = datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)


def rec(**kw: object) -> MemoryRecord:
    base: dict = dict(
        memory_id="m_1", user_id=7, content="Anna 喜欢 hiking ✓ \"quoted\" \\ \n tab\t",
        content_hash="ab" * 32, level=Level.APP, ownership=Ownership.USER,
        mem_type=MemType.SEMANTIC, weight=0.1 + 0.2, weight_at=AT, created_at=AT,
        updated_at=AT, valid_at=AT - timedelta(microseconds=1), app_id="chat",
        custom_tags={"k": [1, 2.5e-7, None, True, {"x": "é"}], "big": 2**63 - 1},
        source_msg_ids=["s1", "s2"], version=1_790_000_000_123_456_789,
        status=Status.ARCHIVED, archived_at=datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
        entities=[EntityLink(entity_id="e_1", name="Anna", type="person", said="my sister",
                             relation="sister")],
    )  # fmt: skip
    base.update(kw)
    return MemoryRecord(**base)


def test_the_bytes_are_the_compact_json_of_the_values_and_decode_to_the_record():
    for r in (rec(), rec(entities=[], custom_tags={}, source_msg_ids=[]), rec(invalid_at=AT)):
        data = record_codec.encode(r)
        vals = record_codec.values(r)
        assert json.loads(data) == vals
        # compact, UTF-8 as written (a float may be spelled 2.5e-7 rather than 2.5e-07)
        assert b", " not in data and b'": ' not in data and "喜欢".encode() in data
        assert record_codec.decode(data) == r
        assert sys.getsizeof(data) < len(data) + 64  # no spare allocation kept with them


def test_values_hold_times_as_exact_microseconds_and_enums_by_value():
    vals = record_codec.values(rec())
    pos = record_codec.POS
    assert vals[pos["weight_at"]] == (AT - record_codec.EPOCH) // timedelta(microseconds=1)
    assert vals[pos["archived_at"]] == -999_999  # before the epoch, still exact
    assert vals[pos["status"]] == "ARCHIVED" and type(vals[pos["status"]]) is str
    assert vals[pos["expire_at"]] is None


def test_what_orjson_refuses_is_encoded_as_json_encodes_it():
    r = rec(content="half a pair \ud800")  # a lone surrogate: not UTF-8
    try:
        json.dumps(record_codec.values(r), ensure_ascii=False).encode()
    except UnicodeEncodeError:
        pass
    else:  # pragma: no cover - json's behaviour, not ours
        raise AssertionError("json encoded a lone surrogate")
    try:
        record_codec.encode(r)
    except UnicodeEncodeError:
        pass  # the same error as before orjson wrote the bytes
    else:
        raise AssertionError("encoded a lone surrogate")


def test_a_value_json_cannot_write_is_refused_as_before():
    r = rec(custom_tags={"at": AT})  # not a JSON value (the API never lets one in)
    try:
        record_codec.encode(r)
    except TypeError:
        pass
    else:
        raise AssertionError("encoded a datetime tag")
