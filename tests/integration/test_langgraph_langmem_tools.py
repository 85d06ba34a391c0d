"""LangMem's memory tools over ``MemstreamStore``: ``create_manage_memory_tool`` and
``create_search_memory_tool`` with LangMem's namespace ``("memories", "{user_id}")``
(memstream's user is the second label, the app the first: ``by_position(user=1,
app_id=0)``), invoked directly with a config as an agent's tool call would (no LLM), sync
and async: create, update, delete and search, against the real API."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator

import pytest
from langmem import create_manage_memory_tool, create_search_memory_tool

from memstream.langgraph import MemstreamStore, by_position
from tests.helpers.api_server import make_key, running_api

pytestmark = pytest.mark.integration

NAMESPACE = ("memories", "{user_id}")


@pytest.fixture(scope="module")
def store(settings, stores, runtime, ingest, tmp_path_factory) -> Iterator[MemstreamStore]:
    path = tmp_path_factory.mktemp("langmem-keys") / "api_keys.json"
    key = make_key(path, "app", ("memories",))
    with running_api(settings.model_copy(update={"api_keys_file": path}), stores, runtime) as url:
        with MemstreamStore(
            url=url, api_key=key, namespace_map=by_position(user=1, app_id=0, session_id=None)
        ) as s:
            yield s


def _config(user: str) -> dict:
    return {"configurable": {"user_id": user}}


def _search(tool, user: str, query: str, **kw) -> list[dict]:
    return json.loads(tool.invoke({"query": query, **kw}, _config(user)))


def test_manage_and_search_tools_create_update_delete_and_find(store: MemstreamStore) -> None:
    manage = create_manage_memory_tool(namespace=NAMESPACE, store=store)
    search = create_search_memory_tool(namespace=NAMESPACE, store=store)
    user, other = f"u-{uuid.uuid4().hex}", f"u-{uuid.uuid4().hex}"

    made = manage.invoke({"content": "Prefers dark mode in every editor"}, _config(user))
    assert made.startswith("created memory ")
    memory_id = made.removeprefix("created memory ")
    manage.invoke({"content": "Is allergic to shellfish"}, _config(user))
    manage.invoke({"content": "Is allergic to cats"}, _config(other))

    found = _search(search, user, "what are the user's allergies?")
    assert [m["value"]["content"] for m in found][0] == "Is allergic to shellfish"
    assert {m["namespace"][1] for m in found} == {user}  # never the other user's
    assert all(m["score"] is not None for m in found)
    assert store.resolved_users()[user] != store.resolved_users()[other]

    updated = manage.invoke(
        {"content": "Prefers light mode now", "action": "update", "id": memory_id}, _config(user)
    )
    assert updated == f"updated memory {memory_id}"
    item = store.get(("memories", user), memory_id)
    assert item is not None and item.value == {"content": "Prefers light mode now"}
    assert _search(search, user, "which editor theme?")[0]["key"] == memory_id

    pages = [_search(search, user, "editor", limit=1, offset=n) for n in (0, 1, 2)]
    assert [len(p) for p in pages] == [1, 1, 0] and pages[0][0]["key"] == memory_id
    gone = manage.invoke({"action": "delete", "id": memory_id}, _config(user))
    assert gone == f"Deleted memory {memory_id}"
    assert store.get(("memories", user), memory_id) is None
    assert memory_id not in {m["key"] for m in _search(search, user, "editor theme")}
    assert len(_search(search, user, "anything")) == 1


def test_the_tools_async(store: MemstreamStore) -> None:
    manage = create_manage_memory_tool(namespace=NAMESPACE, store=store)
    search = create_search_memory_tool(
        namespace=NAMESPACE, store=store, response_format="content_and_artifact"
    )
    user = f"u-{uuid.uuid4().hex}"

    async def run() -> None:
        await asyncio.gather(
            manage.ainvoke({"content": "Lives in Porto"}, _config(user)),
            manage.ainvoke({"content": "Works as a nurse"}, _config(user)),
        )
        call = {
            "name": "search_memory",
            "args": {"query": "where does the user live?"},
            "id": "call-1",
            "type": "tool_call",
        }
        message = await search.ainvoke(call, _config(user))
        items = message.artifact
        assert items[0].value == {"content": "Lives in Porto"} and len(items) == 2
        assert items[0].namespace == ("memories", user)

    asyncio.run(run())
