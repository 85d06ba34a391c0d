"""A flow's epoch by its worker count (dataflows.epochs), as the node's flow threads use it."""

from __future__ import annotations

from datetime import timedelta

from dataflows.epochs import EPOCH_S, EPOCH_S_MANY_WORKERS, epoch_seconds
from dataflows.runner import FlowThread


def test_one_worker_keeps_short_epochs_and_several_take_longer_ones() -> None:
    assert (epoch_seconds(1), epoch_seconds(2), epoch_seconds(8)) == (2.0, 10.0, 10.0)
    assert EPOCH_S < EPOCH_S_MANY_WORKERS


def test_a_flow_thread_takes_its_workers_epoch_unless_told_one() -> None:
    def build():
        raise AssertionError("not started")

    def epoch(**kw) -> timedelta:
        return FlowThread("t", build, None, **kw)._epoch

    assert epoch() == timedelta(seconds=2)
    assert epoch(workers=2) == timedelta(seconds=10)
    assert epoch(workers=2, epoch_s=0.5) == timedelta(seconds=0.5)
