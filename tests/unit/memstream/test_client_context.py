"""The client's ``context`` sends the body the API reads (docs/api.md#context) and parses
its answer: a scope only when the caller names one of its parts, of each chat message
only its role and text (a tool's turn, or one without text, left out)."""

from __future__ import annotations

import asyncio
import json

import httpx

from memstream import AsyncClient, Client
from memstream.schemas.responses import Context

ITEM = {"kind": "entity", "text": "Anna (person): lives in Lyon", "memory_ids": ["m_1"],
        "msg_ids": ["t1"], "entity": "Anna", "entity_id": "e_1"}  # fmt: skip
DATA = {"items": [ITEM], "text": "## People and things\n- Anna (person): lives in Lyon",
        "chars_used": 51}  # fmt: skip


def _answer(sent: list[tuple[str, dict]]):
    def answer(request: httpx.Request) -> httpx.Response:
        sent.append((request.url.path, json.loads(request.content)))
        return httpx.Response(200, json={"code": 0, "msg": "ok", "data": DATA})

    return httpx.MockTransport(answer)


def test_context_sends_its_turns_scope_and_budget_and_reads_the_items() -> None:
    sent: list[tuple[str, dict]] = []
    chat = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Plan a visit to my sister", "name": "Lin"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "content": "{}"},
    ]
    http = httpx.Client(base_url="http://api", transport=_answer(sent))
    with Client(http=http) as memory:
        got = memory.context(7)
        memory.context(7, messages=chat, app_id="chat", max_chars=500, count_hit=False)
        memory.context(7, query="Anna", app_id="chat", include_global=False)
    assert isinstance(got, Context) and got.chars_used == 51 and got.text == DATA["text"]
    assert got.items[0].kind == "entity" and got.items[0].entity_id == "e_1"
    assert sent == [
        ("/memory/v1/context", {"user_id": 7}),
        (
            "/memory/v1/context",
            {
                "user_id": 7,
                "scope": {"app_id": "chat"},
                "messages": [
                    {"role": "system", "content": "You are helpful."},
                    {"role": "user", "content": "Plan a visit to my sister"},
                ],
                "max_chars": 500,
                "count_hit": False,
            },
        ),
        (
            "/memory/v1/context",
            {"user_id": 7, "scope": {"app_id": "chat", "include_global": False}, "query": "Anna"},
        ),
    ]


def test_the_async_client_sends_the_same_body() -> None:
    sent: list[tuple[str, dict]] = []

    async def run() -> Context:
        http = httpx.AsyncClient(base_url="http://api", transport=_answer(sent))
        async with AsyncClient(http=http) as memory:
            return await memory.context(7, query="Anna")

    got = asyncio.run(run())
    assert got.items[0].entity == "Anna"
    assert sent == [("/memory/v1/context", {"user_id": 7, "query": "Anna"})]
