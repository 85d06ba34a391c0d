"""``memstream mcp`` as an MCP host runs it: ``python -m ops.cli mcp`` spawned by the
official SDK's stdio client, its tools calling the real API (uvicorn over the session's
stores) with an app key."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters

from memstream import Client
from tests.helpers.api_server import make_key, running_api

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
TOOLS = {
    "add_memory",
    "recall_memories",
    "update_memory",
    "delete_memory",
    "list_memories",
    "list_entities",
    "get_entity",
    "get_context",
    "get_profile",
    "put_item",
    "get_item",
    "search_items",
    "resolve_user",
}


@pytest.fixture(scope="module")
def served(settings, stores, runtime, ingest, tmp_path_factory):
    path = tmp_path_factory.mktemp("mcp-keys") / "api_keys.json"
    key = make_key(path, "app", ("appA",))
    with running_api(settings.model_copy(update={"api_keys_file": path}), stores, runtime) as url:
        yield url, key


def _stdio(url: str, key: str, user_id: int) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "ops.cli", "mcp", "--api-url", url, "--user-id", str(user_id)],
        env={"MEMSTREAM_API_KEY": key, "PYTHONPATH": str(REPO), "MEMSTREAM_LOG_JSON": "false"},
        cwd=str(REPO),
    )


async def _call(mcp: McpClient, tool: str, **arguments: Any) -> tuple[bool, Any]:
    result = await mcp.call_tool(tool, arguments)
    if result.is_error:
        return True, result.content[0].text
    return False, result.structured_content


def test_tools_over_a_real_stdio_session(served, user_id) -> None:
    url, key = served
    with Client(url, key) as memory:
        seeded = memory.add_structured(user_id, "I am allergic to peanuts.", app_id="appA")
        other = user_id + 1  # a user of its own for the entity tools
        anna = memory.add_structured(other, "My sister Anna lives in Lyon.", app_id="appA")
    params = _stdio(url, key, user_id)
    params.args += ["--app-id", "appA"]

    async def session() -> None:
        async with McpClient(params, read_timeout_seconds=60) as mcp:
            listed = await mcp.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            recall = next(t for t in listed.tools if t.name == "recall_memories")
            assert "query" in recall.input_schema["required"]

            failed, found = await _call(mcp, "recall_memories", query="what food should I avoid?")
            assert not failed and found["hit"], found
            assert found["memories"][0]["memory_id"] == seeded.memory_id
            failed, cut = await _call(mcp, "recall_memories", query="peanuts", max_chars=10)
            assert not failed and cut["memories"] == [] and cut["chars_used"] == 0, cut

            failed, added = await _call(mcp, "add_memory", content="I live in Lisbon")
            assert not failed, added
            mid = added["memory_id"]
            failed, updated = await _call(
                mcp, "update_memory", memory_id=mid, content="I live in Porto"
            )
            assert not failed and "content" in updated["updated"], updated
            failed, page = await _call(mcp, "list_memories")
            assert not failed and page["total"] == 2, page
            assert "I live in Porto" in {m["content"] for m in page["memories"]["APP"]["appA"]}
            failed, deleted = await _call(mcp, "delete_memory", memory_id=mid)
            assert not failed and deleted["deleted"] == 1, deleted
            # the API's refusal reaches the model as a tool error that names the code
            failed, text = await _call(mcp, "delete_memory", memory_id=mid)
            assert failed and "40401: memory" in text, text
            failed, text = await _call(mcp, "recall_memories", query="tea", app_id="appB")
            assert failed and "40101:" in text, text  # not this key's app

            failed, found = await _call(mcp, "list_entities", user_id=other)
            assert not failed, found
            assert [e["name"] for e in found["entities"]] == ["Anna", "Lyon"], found
            failed, shown = await _call(mcp, "get_entity", name="anna", user_id=other)
            assert not failed and shown["entity"]["name"] == "Anna", shown
            assert [m["memory_id"] for m in shown["memories"]] == [anna.memory_id], shown
            failed, text = await _call(mcp, "get_entity", name="Bob", user_id=other)
            assert failed and "40401:" in text, text
            failed, text = await _call(mcp, "get_entity", user_id=other)
            assert failed and "40001:" in text, text  # neither a name nor an id

            turn = [{"role": "user", "content": "Shall I visit my sister?"}]
            failed, ctx = await _call(mcp, "get_context", messages=turn, user_id=other)
            assert not failed and ctx["chars_used"] == len(ctx["text"]) > 0, ctx
            assert anna.memory_id in {m for i in ctx["items"] for m in i["memory_ids"]}, ctx
            failed, ctx = await _call(mcp, "get_context", query="peanuts", max_chars=60)
            assert not failed and 0 < ctx["chars_used"] <= 60, ctx
            assert "peanuts" in ctx["text"], ctx
            failed, text = await _call(mcp, "get_context", query="tea", app_id="appB")
            assert failed and "40101:" in text, text
            failed, profile = await _call(mcp, "get_profile", user_id=other)
            assert not failed and profile["items"], profile
            assert profile["items"][0]["memory_ids"] == [anna.memory_id], profile

    asyncio.run(session())


def test_item_tools_keep_the_agents_notes_and_resolve_a_string_user(served, user_id) -> None:
    """put_item / get_item / search_items over the items endpoints, for a user named by a
    string (resolve_user); another app's items stay out of reach (the key's scope)."""
    url, key = served
    params = _stdio(url, key, user_id)
    params.args += ["--app-id", "appA"]

    async def session() -> None:
        async with McpClient(params, read_timeout_seconds=60) as mcp:
            failed, uid = await _call(mcp, "resolve_user", external_id=f"mcp-{user_id}")
            assert not failed, uid
            uid = uid["result"]
            failed, again = await _call(mcp, "resolve_user", external_id=f"mcp-{user_id}")
            assert not failed and again["result"] == uid, again
            failed, text = await _call(mcp, "resolve_user", external_id="nobody", create=False)
            assert failed and "40401:" in text, text

            note = {"text": "the user prefers morning meetings", "topic": "calendar"}
            failed, put = await _call(
                mcp, "put_item", namespace=["notes"], key="meetings", value=note, user_id=uid
            )
            assert not failed and put["op"] == "put", put
            failed, got = await _call(
                mcp, "get_item", namespace=["notes"], key="meetings", user_id=uid
            )
            assert not failed and got["value"] == note, got
            failed, page = await _call(
                mcp, "search_items", namespace_prefix=["notes"], query="when to schedule a call",
                filter={"topic": "calendar"}, user_id=uid,
            )  # fmt: skip
            assert not failed and [i["key"] for i in page["items"]] == ["meetings"], page
            failed, gone = await _call(
                mcp, "put_item", namespace=["notes"], key="meetings", value=None, user_id=uid
            )
            assert not failed and gone["op"] == "delete", gone
            failed, text = await _call(
                mcp, "get_item", namespace=["notes"], key="meetings", user_id=uid
            )
            assert failed and "40401:" in text, text
            failed, text = await _call(
                mcp, "get_item", namespace=["notes"], key="x", user_id=uid, app_id="appB"
            )
            assert failed and "40101:" in text, text  # not this key's app

    asyncio.run(session())
