"""Initial weights, lazy decay, recovery and threshold timing, with hand-computed numbers."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from core.settings import Settings
from core.weights import (
    below_threshold_at,
    days_until_below,
    decay,
    decay_alpha,
    initial_weight,
    is_persona,
    recover,
    type_weight,
    weight_now,
)
from memstream.schemas.enums import MemType, Ownership

S = Settings.model_construct()  # defaults only, whatever the environment says
LAM = math.log(8) / 90
T0 = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ownership", "mem_type", "expected"),
    [
        (Ownership.USER, MemType.SEMANTIC, 0.80),
        (Ownership.USER, MemType.EPISODIC, 0.60),
        (Ownership.USER, MemType.PROCEDURAL, 0.70),
        (Ownership.AGENT, MemType.SEMANTIC, 0.70),
        (Ownership.AGENT, MemType.EPISODIC, 0.50),
        (Ownership.AGENT, MemType.PROCEDURAL, 0.60),
    ],
)
def test_initial_weight_follows_the_table(ownership, mem_type, expected):
    assert initial_weight(ownership, mem_type, S) == pytest.approx(expected)
    assert type_weight(ownership, mem_type, S) == pytest.approx(expected)


def test_time_bound_event_is_085_whatever_the_type():
    assert initial_weight(Ownership.AGENT, MemType.EPISODIC, S, time_bound=True) == 0.85


def test_important_lifts_to_090():
    assert initial_weight(Ownership.USER, MemType.EPISODIC, S, is_important=True) == 0.90
    assert (
        initial_weight(Ownership.USER, MemType.SEMANTIC, S, is_important=True, time_bound=True)
        == 0.90
    )


def test_important_keeps_a_higher_original():
    s = Settings.model_construct(weight_important=0.75)
    assert initial_weight(Ownership.USER, MemType.SEMANTIC, s, is_important=True) == 0.80
    assert initial_weight(Ownership.USER, MemType.EPISODIC, s, is_important=True) == 0.75


def test_default_lambda_is_ln8_over_90():
    assert S.decay_lambda == pytest.approx(0.023104906, abs=1e-9)


@pytest.mark.parametrize(
    ("days", "expected"),
    [(0, 0.80), (45, 0.80 / math.sqrt(8)), (90, 0.10), (180, 0.0125)],
)
def test_normal_memory_decays_from_080_to_010_in_90_days(days, expected):
    w = weight_now(0.80, T0, T0 + timedelta(days=days), S, is_important=False)
    assert w == pytest.approx(expected, abs=1e-9)
    assert 0.80 / math.sqrt(8) == pytest.approx(0.282843, abs=1e-6)


def test_important_memory_decays_ten_times_slower():
    # 0.8·e^(−ln8/90·0.1·90) = 0.8·8^(−0.1) = 0.649802
    w90 = weight_now(0.80, T0, T0 + timedelta(days=90), S, is_important=True)
    assert w90 == pytest.approx(0.649802, abs=1e-6)
    w900 = weight_now(0.80, T0, T0 + timedelta(days=900), S, is_important=True)
    assert w900 == pytest.approx(0.10, abs=1e-9)


def test_fractional_days_count():
    w = weight_now(0.80, T0, T0 + timedelta(hours=12), S, is_important=False)
    assert w == pytest.approx(0.80 * math.exp(-LAM * 0.5))


def test_agent_persona_memory_does_not_decay():
    tags = {"persona": True}
    later = T0 + timedelta(days=365)
    w = weight_now(
        0.70, T0, later, S, is_important=False, ownership=Ownership.AGENT, custom_tags=tags
    )
    assert w == 0.70
    assert (
        decay_alpha(
            S, is_important=False, ownership=Ownership.AGENT, custom_tags={"persona": "TRUE"}
        )
        == 0.0
    )


def test_persona_tag_on_a_user_memory_does_not_exempt_it():
    assert not is_persona(Ownership.USER, {"persona": True})
    assert not is_persona(Ownership.AGENT, {"persona": False})
    assert not is_persona(Ownership.AGENT, None)
    w = weight_now(
        0.80, T0, T0 + timedelta(days=90), S, is_important=False, custom_tags={"persona": True}
    )
    assert w == pytest.approx(0.10)


def test_clock_skew_never_raises_weight():
    assert decay(0.8, -3.0, lam=LAM, alpha=1.0) == 0.8


def test_naive_datetimes_are_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        weight_now(0.8, datetime(2025, 1, 1), T0, S, is_important=False)


@pytest.mark.parametrize(
    ("current", "cap", "expected"),
    [(0.25, 0.80, 0.35), (0.75, 0.80, 0.80), (0.80, 0.80, 0.80), (0.85, 0.80, 0.85)],
)
def test_recovery_adds_delta_up_to_the_type_ceiling_and_never_lowers(current, cap, expected):
    assert recover(current, cap, 0.10) == pytest.approx(expected)


def test_days_until_below_the_archive_threshold():
    assert days_until_below(0.80, 0.10, lam=LAM, alpha=1.0) == pytest.approx(90.0)
    assert days_until_below(0.80, 0.10, lam=LAM, alpha=0.1) == pytest.approx(900.0)
    # 0.60 → 0.10: ln 6 / (ln 8 / 90) = 77.55 days
    assert days_until_below(0.60, 0.10, lam=LAM, alpha=1.0) == pytest.approx(77.5489, abs=1e-4)
    assert days_until_below(0.10, 0.10, lam=LAM, alpha=1.0) == 0.0
    assert days_until_below(0.05, 0.10, lam=LAM, alpha=1.0) == 0.0
    assert math.isinf(days_until_below(0.70, 0.10, lam=LAM, alpha=0.0))


def test_below_threshold_at_gives_the_crossing_instant():
    at = below_threshold_at(0.80, T0, 0.10, lam=LAM, alpha=1.0)
    assert at is not None and abs((at - (T0 + timedelta(days=90))).total_seconds()) < 1e-3
    assert below_threshold_at(0.70, T0, 0.10, lam=LAM, alpha=0.0) is None
