"""A LangGraph graph keeps its long-term memory in memstream: a ``StateGraph`` compiled with
``store=MemstreamStore(...)``, one node writing through ``store.put`` under the user of
the run's config, the next reading with ``store.search`` (docs/api.md#langgraph-store),
run synchronously (``batch`` on ``Client``) and asynchronously (``abatch`` on
``AsyncClient``), against the real API over the session's stack; and the example of
docs/api.md#langgraph-store runs as written."""

from __future__ import annotations

import asyncio
import operator
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from memstream.langgraph import MemstreamStore
from tests.helpers.api_server import make_key, running_api

pytestmark = pytest.mark.integration


class State(TypedDict):
    fact: str
    question: str
    recalled: Annotated[list[str], operator.add]


def _namespace(config: RunnableConfig) -> tuple[str, str]:
    return (config["configurable"]["user_id"], "assistant")  # (user, app_id)


def remember(state: State, config: RunnableConfig, *, store: BaseStore) -> dict:
    store.put(_namespace(config), uuid.uuid4().hex, {"text": state["fact"]})
    return {}


def recall(state: State, config: RunnableConfig, *, store: BaseStore) -> dict:
    found = store.search(_namespace(config), query=state["question"], limit=3)
    return {"recalled": [item.value["text"] for item in found]}


async def aremember(state: State, config: RunnableConfig, *, store: BaseStore) -> dict:
    await store.aput(_namespace(config), uuid.uuid4().hex, {"text": state["fact"]})
    return {}


async def arecall(state: State, config: RunnableConfig, *, store: BaseStore) -> dict:
    found = await store.asearch(_namespace(config), query=state["question"], limit=3)
    return {"recalled": [item.value["text"] for item in found]}


def _graph(store: BaseStore, write, read):
    builder = StateGraph(State)
    builder.add_node("remember", write)
    builder.add_node("recall", read)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


@pytest.fixture(scope="module")
def api(settings, stores, runtime, ingest, tmp_path_factory) -> Iterator[tuple[str, str]]:
    path = tmp_path_factory.mktemp("langgraph-graph-keys") / "api_keys.json"
    key = make_key(path, "app", ("assistant",))
    with running_api(settings.model_copy(update={"api_keys_file": path}), stores, runtime) as url:
        yield url, key


def test_a_graph_writes_and_reads_each_users_memory(api) -> None:
    url, key = api
    alice, bob = f"alice-{uuid.uuid4().hex}", f"bob-{uuid.uuid4().hex}"
    with MemstreamStore(url=url, api_key=key) as store:
        graph = _graph(store, remember, recall)
        graph.invoke(
            {"fact": "I am allergic to peanuts", "question": "-", "recalled": []},
            {"configurable": {"user_id": alice}},
        )
        out = graph.invoke(
            {"fact": "My sister lives in Lisbon", "question": "what food must I avoid?"},
            {"configurable": {"user_id": alice}},
        )
        assert out["recalled"][0] == "I am allergic to peanuts"
        assert set(out["recalled"]) == {"I am allergic to peanuts", "My sister lives in Lisbon"}

        other = graph.invoke(
            {"fact": "I play the cello", "question": "what food must I avoid?"},
            {"configurable": {"user_id": bob}},
        )
        assert other["recalled"] == ["I play the cello"]  # never alice's


def test_an_async_graph_on_the_async_client(api) -> None:
    url, key = api
    carol = f"carol-{uuid.uuid4().hex}"

    async def run() -> dict:
        async with MemstreamStore(url=url, api_key=key) as store:
            graph = _graph(store, aremember, arecall)
            await graph.ainvoke(
                {"fact": "I moved to Oslo last spring", "question": "-"},
                {"configurable": {"user_id": carol}},
            )
            return await graph.ainvoke(
                {"fact": "I drive an electric car", "question": "which city do I live in?"},
                {"configurable": {"user_id": carol}},
            )

    out = asyncio.run(run())
    assert out["recalled"][0] == "I moved to Oslo last spring"
    assert len(out["recalled"]) == 2


def test_the_documented_example_runs(api) -> None:
    url, key = api
    page = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    section = page.split("\n## LangGraph store\n", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    placeholder = 'url="http://127.0.0.1:8000", api_key="msk_…"'
    assert placeholder in code
    user = f"alice-{uuid.uuid4().hex}"
    code = code.replace(placeholder, f"url={url!r}, api_key={key!r}").replace('"alice"', repr(user))
    scope: dict = {}
    exec(compile(code, "docs/api.md#langgraph-store", "exec"), scope)
    store = scope["store"]
    out = scope["graph"].invoke(
        {"messages": [("user", "I also play the trumpet")]}, {"configurable": {"user_id": user}}
    )
    assert out["messages"][-1].content.startswith("I remember: I also play the trumpet")
    assert "I love jazz" in out["messages"][-1].content
    assert len(store.search((user, "assistant"))) == 2
    store.close()
