"""A model's expire_at hint the stores cannot hold is dropped, the fact kept (issue 31:
no value of a model's answer may poison the flow downstream)."""

from __future__ import annotations

from datetime import date

import pytest

from memstream.schemas.facts import Fact


@pytest.mark.parametrize("day", [date(9999, 12, 31), date(1, 1, 1), date(1899, 12, 31)])
def test_an_unstorable_hint_is_no_hint(day: date) -> None:
    fact = Fact(text="Dentist appointment", msg_index=0, expire_at=day)
    assert fact.expire_at is None and fact.text == "Dentist appointment"


def test_a_storable_hint_is_kept() -> None:
    assert Fact(text="x", msg_index=0, expire_at=date(2030, 1, 1)).expire_at == date(2030, 1, 1)
