"""The client's key-value item methods send the body the API reads
(docs/api.md#key-value-items) — a value exactly as given, its nulls included, and
``value: null`` for a delete — and read the answers: ``get_item`` is None on 40401."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from memstream import AsyncClient, Client
from memstream.errors import BadRequest, NotFound
from memstream.schemas.responses import Item

ITEM = {
    "namespace": ["n"],
    "key": "k",
    "value": {"b": None, "a": 1},
    "created_at": "2025-01-31T12:00:00Z",
    "updated_at": "2025-01-31T12:00:00Z",
    "memory_id": "i_1",
    "score": None,
}
ANSWERS = {
    "/memory/v1/items/put": {"code": 0, "msg": "ok", "data": {"memory_id": "i_1", "op": "put"}},
    "/memory/v1/items/get": {"code": 0, "msg": "ok", "data": {"item": ITEM}},
    "/memory/v1/items/search": {"code": 0, "msg": "ok", "data": {"items": [ITEM]}},
    "/memory/v1/items/namespaces": {"code": 0, "msg": "ok", "data": {"namespaces": [["n"]]}},
}


def _answer(sent: list[tuple[str, dict]], missing: bool = False):
    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append((request.url.path, body))
        if missing and request.url.path.endswith("/get"):
            return httpx.Response(404, json={"code": 40401, "msg": "no item", "data": None})
        if body.get("key") == "bad":
            return httpx.Response(400, json={"code": 40001, "msg": "bad", "data": None})
        return httpx.Response(200, json=ANSWERS[request.url.path.rstrip("/")])

    return httpx.MockTransport(answer)


def test_the_sync_client_sends_values_as_given_and_reads_items() -> None:
    sent: list[tuple[str, dict]] = []
    http = httpx.Client(base_url="http://api", transport=_answer(sent))
    with Client(http=http) as memory:
        put = memory.put_item(7, ["n"], "k", {"b": None, "a": [None]}, app_id="a", index=False)
        memory.put_item(7, ["n"], "k", None, request_id="r1")
        item = memory.get_item(7, ["n"], "k", app_id="a")
        page = memory.search_items(7, ["n"], query="q", filter={"x": None}, limit=5)
        names = memory.list_item_namespaces(7, prefix=["n"], max_depth=1)
        with pytest.raises(BadRequest):
            memory.put_item(7, ["n"], "bad", {})
    assert put.op == "put" and isinstance(item, Item) and item.value == {"b": None, "a": 1}
    assert page.items[0].key == "k" and names.namespaces == [["n"]]
    bodies = [b for _, b in sent]
    assert bodies[0]["value"] == {"b": None, "a": [None]} and bodies[0]["index"] is False
    assert bodies[0]["request_id"] and bodies[0]["app_id"] == "a"
    assert bodies[1] == {
        "user_id": 7,
        "namespace": ["n"],
        "key": "k",
        "value": None,
        "request_id": "r1",
    }
    assert bodies[2] == {"user_id": 7, "app_id": "a", "namespace": ["n"], "key": "k"}
    assert bodies[3] == {
        "user_id": 7,
        "namespace_prefix": ["n"],
        "query": "q",
        "limit": 5,
        "filter": {"x": None},
    }
    assert bodies[4] == {"user_id": 7, "prefix": ["n"], "max_depth": 1}


def test_get_item_is_none_when_absent_sync_and_async() -> None:
    sent: list[tuple[str, dict]] = []
    with Client(http=httpx.Client(base_url="http://api", transport=_answer(sent, True))) as m:
        assert m.get_item(7, ["n"], "k") is None

    async def run() -> None:
        http = httpx.AsyncClient(base_url="http://api", transport=_answer(sent, True))
        async with AsyncClient(http=http) as memory:
            assert await memory.get_item(7, ["n"], "k") is None
            assert (await memory.put_item(7, ["n"], "k", {"v": 1})).op == "put"

    asyncio.run(run())


def test_subtree_and_a_lookup_only_resolve_are_sent_only_when_asked() -> None:
    sent: list[tuple[str, dict]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append((request.url.path, body))
        if request.url.path.endswith("/users/resolve"):
            if body.get("create") is False:
                return httpx.Response(404, json={"code": 40401, "msg": "no user", "data": None})
            return httpx.Response(
                200, json={"code": 0, "msg": "ok", "data": {"user_id": 9, "created": True}}
            )
        return httpx.Response(200, json=ANSWERS[request.url.path.rstrip("/")])

    http = httpx.Client(base_url="http://api", transport=httpx.MockTransport(answer))
    with Client(http=http) as memory:
        memory.search_items(7, subtree=True)
        memory.search_items(7)
        memory.list_item_namespaces(7, app_id="a", subtree=True)
        assert memory.resolve_user("alice") == 9
        with pytest.raises(NotFound):
            memory.resolve_user("alice", create=False)
    bodies = [b for _, b in sent]
    assert bodies[0] == {"user_id": 7, "namespace_prefix": [], "subtree": True}
    assert "subtree" not in bodies[1]  # the default is not sent (an older server's body)
    assert bodies[2] == {"user_id": 7, "app_id": "a", "subtree": True}
    assert bodies[3] == {"external_id": "alice"} and bodies[4] == {
        "external_id": "alice",
        "create": False,
    }
