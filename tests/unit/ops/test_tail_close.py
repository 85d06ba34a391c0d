"""`memstream tail` ends on Ctrl-C even when the consumer's close does not return."""

from __future__ import annotations

import threading
import time

from ops import tail_cmd


class _Consumer:
    def __init__(self, blocks: bool) -> None:
        self.release = threading.Event()
        self.closed = threading.Event()
        self.blocks = blocks

    def close(self) -> None:
        if self.blocks:
            self.release.wait()
        self.closed.set()


def test_a_close_that_returns_is_waited_for() -> None:
    consumer = _Consumer(blocks=False)
    assert tail_cmd.close_within(consumer, 5.0) is True
    assert consumer.closed.is_set()


def test_a_close_that_hangs_is_left_after_the_wait() -> None:
    consumer = _Consumer(blocks=True)
    started = time.monotonic()
    assert tail_cmd.close_within(consumer, 0.2) is False
    assert time.monotonic() - started < 2.0
    assert not consumer.closed.is_set()
    consumer.release.set()  # the close goes on, on its own thread, and ends
    assert consumer.closed.wait(5.0)
