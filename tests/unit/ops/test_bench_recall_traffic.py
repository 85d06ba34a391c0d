"""The recall bench's traffic model: sessions of one user, uniform or Zipf popularity."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from ops.bench.recall import traffic

USERS = list(range(100, 200))


def _runs(seq: list[int]) -> list[int]:
    """Lengths of the runs of one user in a row."""
    out, last = [], None
    for u in seq:
        if u == last:
            out[-1] += 1
        else:
            out.append(1)
        last = u
    return out


def test_sessions_are_runs_of_one_user():
    seq = traffic(USERS, 1000, random.Random(1), None, 5)
    assert len(seq) == 1000 and set(seq) <= set(USERS)
    # a run is one session or several of the same user drawn back to back
    assert all(n % 5 == 0 for n in _runs(seq)[:-1])


def test_uniform_traffic_touches_most_users_evenly():
    counts = Counter(traffic(USERS, 20_000, random.Random(2), None, 1))
    assert len(counts) == len(USERS)
    assert max(counts.values()) < 2.0 * min(counts.values())


def test_zipf_traffic_follows_one_over_rank_to_the_s():
    counts = Counter(traffic(USERS, 50_000, random.Random(3), 1.1, 1))
    ranked = [n for _, n in counts.most_common()]
    # the most popular user against the 10th: (10/1)^1.1 = 12.6 times the share
    assert ranked[0] / ranked[9] == pytest.approx(10**1.1, rel=0.2)
    total = sum(1.0 / r**1.1 for r in range(1, len(USERS) + 1))
    assert ranked[0] / 50_000 == pytest.approx(1.0 / total, rel=0.05)


def test_a_session_length_below_one_is_refused():
    with pytest.raises(ValueError):
        traffic(USERS, 10, random.Random(4), None, 0)
