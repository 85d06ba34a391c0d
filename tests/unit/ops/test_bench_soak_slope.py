"""bench soak's drift: a least-squares slope, so one transient sample weighs less than in the endpoints."""

from __future__ import annotations

from ops.bench.soak import _slope


def test_a_steady_climb_is_its_rate_per_minute() -> None:
    samples = [{"t_s": t, "rss_mb": 100 + t / 6} for t in range(0, 301, 30)]  # 10 MB/min
    assert _slope(samples, "rss_mb") == 10.0


def test_one_spike_at_the_end_of_a_flat_run_weighs_less_than_in_the_endpoints() -> None:
    samples = [{"t_s": t, "rss_mb": 1000.0} for t in range(0, 301, 30)]
    samples[-1]["rss_mb"] = 1040.0  # the endpoints alone would say 8 MB/min
    assert _slope(samples, "rss_mb") < 4


def test_one_sample_has_no_slope() -> None:
    assert _slope([{"t_s": 0.0, "rss_mb": 5.0}], "rss_mb") == 0.0
