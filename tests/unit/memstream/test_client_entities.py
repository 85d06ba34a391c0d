"""The client's entity calls send the bodies the API reads (docs/api.md#entities): no
``scope`` unless the caller names one of its parts (none means every memory the key may
read, while ``{}`` would mean GLOBAL only)."""

from __future__ import annotations

import json

import httpx

from memstream import Client
from memstream.schemas.responses import Entities, EntityDetail

ANNA = {
    "entity_id": "e_1",
    "name": "Anna",
    "type": "person",
    "aliases": ["Annie"],
    "memories": 2,
    "last_seen": "2025-01-31T12:00:00Z",
}


def _client(sent: list[tuple[str, dict]]) -> Client:
    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append((request.url.path, body))
        if request.url.path.endswith("/entities"):
            data = {"entities": [ANNA], "total": 1, "page": 1, "page_size": 100}
            data["has_more"] = False
        else:
            data = {"entity": ANNA, "summary": [{"text": "Anna lives in Lyon"}], "memories": []}
        return httpx.Response(200, json={"code": 0, "msg": "ok", "data": data})

    return Client(http=httpx.Client(base_url="http://api", transport=httpx.MockTransport(answer)))


def test_entities_sends_a_scope_only_when_one_is_named() -> None:
    sent: list[tuple[str, dict]] = []
    with _client(sent) as memory:
        page = memory.entities(7)
        memory.entities(7, app_id="chat", type="place", page=2, page_size=10)
        memory.entities(7, include_global=False)
    assert isinstance(page, Entities) and page.entities[0].aliases == ["Annie"]
    assert sent == [
        ("/memory/v1/entities", {"user_id": 7}),
        (
            "/memory/v1/entities",
            {
                "user_id": 7,
                "scope": {"app_id": "chat"},
                "type": "place",
                "page": 2,
                "page_size": 10,
            },
        ),
        ("/memory/v1/entities", {"user_id": 7, "scope": {"include_global": False}}),
    ]


def test_entity_by_name_or_id() -> None:
    sent: list[tuple[str, dict]] = []
    with _client(sent) as memory:
        shown = memory.entity(7, name="anna", max_chars=300)
        memory.entity(7, entity_id="e_1", app_id="chat", include_global=True)
    assert isinstance(shown, EntityDetail) and shown.entity.name == "Anna"
    assert shown.entities is None and shown.summary[0].memory_ids == []
    assert sent == [
        ("/memory/v1/entity", {"user_id": 7, "name": "anna", "max_chars": 300}),
        (
            "/memory/v1/entity",
            {"user_id": 7, "scope": {"app_id": "chat", "include_global": True}, "entity_id": "e_1"},
        ),
    ]
