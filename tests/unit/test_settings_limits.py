"""The edge's byte limits are coherent: a turn never outgrows the event it travels in."""

from __future__ import annotations

import pytest

from core.settings import Settings, SettingsError


def test_a_turn_may_not_exceed_an_event() -> None:
    assert Settings(max_message_bytes=1000, max_event_bytes=1000).max_event_bytes == 1000
    with pytest.raises((ValueError, SettingsError), match="max_message_bytes"):
        Settings(max_message_bytes=2000, max_event_bytes=1000)
