"""Polling helper for asynchronous outcomes (tasks, flows)."""

from __future__ import annotations

import pytest


def wait_for(check, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    """Poll ``check`` until it returns a truthy value; fail the test with ``what`` if not."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
