"""The client's ``profile`` sends the body the API reads (docs/api.md#profile) and parses
its answer: no ``scope`` unless the caller names one of its parts (the API's default is
the GLOBAL profile)."""

from __future__ import annotations

import json

import httpx

from memstream import Client
from memstream.schemas.responses import Profile

ITEM = {"text": "Anna lives in Lyon", "entity": "Anna", "memory_ids": ["m_1"], "msg_ids": ["t1"]}


def _client(sent: list[tuple[str, dict]]) -> Client:
    def answer(request: httpx.Request) -> httpx.Response:
        sent.append((request.url.path, json.loads(request.content)))
        data = {"items": [ITEM], "chars_used": 18, "updated_at": "2025-01-31T12:00:00Z"}
        return httpx.Response(200, json={"code": 0, "msg": "ok", "data": data})

    return Client(http=httpx.Client(base_url="http://api", transport=httpx.MockTransport(answer)))


def test_profile_sends_its_scope_entity_and_budget_and_reads_the_items() -> None:
    sent: list[tuple[str, dict]] = []
    with _client(sent) as memory:
        got = memory.profile(7)
        memory.profile(7, app_id="chat", entity="Anna", max_chars=500)
        memory.profile(7, app_id="chat", include_global=False)
    assert isinstance(got, Profile) and got.chars_used == 18
    assert got.items[0].entity == "Anna" and got.items[0].msg_ids == ["t1"]
    assert got.updated_at is not None and got.updated_at.year == 2025
    assert sent == [
        ("/memory/v1/profile", {"user_id": 7}),
        (
            "/memory/v1/profile",
            {"user_id": 7, "scope": {"app_id": "chat"}, "entity": "Anna", "max_chars": 500},
        ),
        (
            "/memory/v1/profile",
            {"user_id": 7, "scope": {"app_id": "chat", "include_global": False}},
        ),
    ]
