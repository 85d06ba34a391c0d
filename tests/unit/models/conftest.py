"""Fixtures over the scripted OpenAI-compatible server (tests/helpers/scripted_llm.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.scripted_llm import Answer, Scripted, scripted_server

__all__ = ["Answer", "Scripted"]


@pytest.fixture(scope="session")
def _scripted_server() -> Iterator[Scripted]:
    with scripted_server() as script:
        yield script


@pytest.fixture
def scripted(_scripted_server: Scripted) -> Scripted:
    """The session's server with an empty script and request log for this test."""
    with _scripted_server.lock:
        _scripted_server.answers.clear()
        _scripted_server.requests.clear()
    return _scripted_server
