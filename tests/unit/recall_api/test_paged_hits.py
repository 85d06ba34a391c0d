"""Recall over ACTIVE and paged-out memories as one archive (``recall_api.recall``): of
each channel, the top ``limit`` over both indexes, so ranking meets as many candidates
as it would without paged-out memories."""

from __future__ import annotations

from recall_api.channels import top_of_both


def test_each_channel_keeps_its_top_over_both_indexes():
    active, paged = object(), object()
    found = [
        (active, {"a1": 0.9, "a2": 0.5, "a3": 0.1}, {"a1": 0.2, "a4": 0.8}),
        (paged, {"p1": 0.7, "p2": 0.3}, {"p3": 0.9, "p4": 0.1}),
    ]
    out = top_of_both(found, 3)  # type: ignore[arg-type]
    assert [held for held, _, _ in out] == [active, paged]
    (_, d_active, lx_active), (_, d_paged, lx_paged) = out
    assert d_active == {"a1": 0.9, "a2": 0.5} and d_paged == {"p1": 0.7}
    assert lx_active == {"a1": 0.2, "a4": 0.8} and lx_paged == {"p3": 0.9}
    assert sum(len(d) for _, d, _ in out) == 3 and sum(len(lx) for _, _, lx in out) == 3


def test_fewer_hits_than_the_limit_are_all_kept():
    found = [(None, {"a": 0.1}, {}), (None, {"p": 0.2}, {"q": 0.3})]
    assert top_of_both(found, 60) == found  # type: ignore[arg-type]
