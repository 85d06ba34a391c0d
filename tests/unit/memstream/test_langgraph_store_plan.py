"""``memstream.langgraph.MemstreamStore``'s own rules, apart from the API (which
tests/integration/test_langgraph_store.py drives for real): how a namespace maps to a user,
app and session, what a batch sends in which order, the resolution of external ids once
per store, what is embedded, the clear errors, and that ``import memstream`` leaves
LangGraph alone. The client here records the calls it is asked to make."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from memstream.errors import NotFound
from memstream.langgraph import MemstreamStore, Scope, by_position
from memstream.schemas.responses import Item, ItemNamespaces, ItemPage, ItemPut

NOW = datetime(2026, 1, 2, tzinfo=UTC)


class Recorder:
    """The five client methods the store uses, answering from a dict and recording
    each call as (method, kwargs)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.ids: dict[str, int] = {}
        self.items: dict[tuple[int, tuple[str, ...], str], dict[str, Any]] = {}

    def resolve_user(self, external_id: str, create: bool = True) -> int:
        self.calls.append(("resolve_user", {"external_id": external_id, "create": create}))
        if not create and external_id not in self.ids:
            raise NotFound(40401, "no user has this external_id in this tenant")
        return self.ids.setdefault(external_id, 1000 + len(self.ids))

    def put_item(self, **kw: Any) -> ItemPut:
        self.calls.append(("put_item", kw))
        key = (kw["user_id"], tuple(kw["namespace"]), kw["key"])
        if kw["value"] is None:
            self.items.pop(key, None)
        else:
            self.items[key] = kw["value"]
        return ItemPut(memory_id="i_1", op="put")

    def get_item(self, **kw: Any) -> Item | None:
        self.calls.append(("get_item", kw))
        value = self.items.get((kw["user_id"], tuple(kw["namespace"]), kw["key"]))
        if value is None:
            return None
        return Item(
            namespace=kw["namespace"],
            key=kw["key"],
            value=value,
            created_at=NOW,
            updated_at=NOW,
            memory_id="i_1",
        )

    def search_items(self, **kw: Any) -> ItemPage:
        self.calls.append(("search_items", kw))
        return ItemPage(items=[])

    def list_item_namespaces(self, **kw: Any) -> ItemNamespaces:
        self.calls.append(("list_item_namespaces", kw))
        return ItemNamespaces(namespaces=[["alice", "app"]])

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


class AsyncRecorder:
    """The same client, each method a coroutine (as on ``AsyncClient``)."""

    def __init__(self, inner: Recorder) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        async def call(*args: Any, **kw: Any) -> Any:
            await asyncio.sleep(0)
            return method(*args, **kw)

        return call


def _store(**kw: Any) -> tuple[MemstreamStore, Recorder]:
    rec = Recorder()
    return MemstreamStore(rec, **kw), rec  # type: ignore[arg-type]


def test_default_namespace_is_user_app_session_and_the_user_is_resolved_once() -> None:
    store, rec = _store()
    store.put(("alice", "notes-app", "s1"), "k", {"a": 1})
    store.put(("alice",), "k", {"a": 1})
    assert store.get(("alice", "notes-app", "s1"), "k").value == {"a": 1}  # type: ignore[union-attr]
    assert rec.names().count("resolve_user") == 1
    puts = [kw for name, kw in rec.calls if name == "put_item"]
    assert (puts[0]["app_id"], puts[0]["session_id"]) == ("notes-app", "s1")
    assert (puts[1]["app_id"], puts[1]["session_id"]) == (None, None)  # GLOBAL
    assert puts[0]["namespace"] == ["alice", "notes-app", "s1"]  # the whole namespace
    assert store.resolved_users() == {"alice": 1000}


def test_a_map_of_ints_is_memstreams_own_user_id_and_resolves_nothing() -> None:
    store, rec = _store(namespace_map=lambda ns: Scope(int(ns[0]), "app"))
    store.put(("42", "x"), "k", {"a": 1})
    assert rec.names() == ["put_item"]
    assert rec.calls[0][1]["user_id"] == 42


def test_langmem_layout_by_position_and_what_does_not_map() -> None:
    store, rec = _store(namespace_map=by_position(user=1, app_id=0, session_id=None))
    store.put(("memories", "u-7", "profile"), "k", {"a": 1})
    kw = rec.calls[-1][1]
    assert (kw["app_id"], kw["session_id"]) == ("memories", None)
    with pytest.raises(InvalidNamespaceError, match=r"\('memories',\).*names the user"):
        store.search(("memories",))
    with pytest.raises(InvalidNamespaceError, match="'\\*' in a label"):
        store.list_namespaces(prefix=("memories", "*"))  # the user is a wildcard
    with pytest.raises(InvalidNamespaceError, match="does not map"):
        _store(namespace_map=lambda ns: "just a string")[0].put(("a",), "k", {})


def test_search_and_listing_need_a_prefix_naming_the_user() -> None:
    store, rec = _store()
    with pytest.raises(InvalidNamespaceError, match="names the user"):
        store.search(())
    with pytest.raises(InvalidNamespaceError, match="names the user"):
        store.list_namespaces()
    with pytest.raises(InvalidNamespaceError, match="names the user"):
        store.list_namespaces(suffix=("x",))
    with pytest.raises(InvalidNamespaceError, match="'\\*' in a label"):
        store.list_namespaces(prefix=("*", "app"))  # across users
    assert rec.calls == []  # refused before any call
    rec.ids["alice"] = 7
    found = store.list_namespaces(prefix=("alice", "app"), suffix=("*", "x"), max_depth=2)
    assert found == [("alice", "app")]
    kw = rec.calls[-1][1]
    assert (kw["app_id"], kw["prefix"], kw["suffix"]) == ("app", ["alice", "app"], ["*", "x"])
    assert kw["max_depth"] == 2 and kw["user_id"] == 7


def _read(store: MemstreamStore, rec: Recorder, call: Any) -> tuple[Any, ...]:
    call(store)
    kw = rec.calls[-1][1]
    return kw["app_id"], kw["session_id"], kw["subtree"]


def test_a_prefix_above_the_app_or_session_label_reads_the_subtree() -> None:
    store, rec = _store()
    rec.ids.update(alice=1, u=2)
    assert _read(store, rec, lambda s: s.search(("alice",))) == (None, None, True)
    assert _read(store, rec, lambda s: s.search(("alice", "chat"))) == ("chat", None, True)
    assert _read(store, rec, lambda s: s.search(("alice", "chat", "s1"))) == ("chat", "s1", False)
    deeper = lambda s: s.search(("alice", "chat", "s1", "notes"))  # noqa: E731
    assert _read(store, rec, deeper) == ("chat", "s1", False)
    assert rec.calls[-1][1]["namespace_prefix"] == ["alice", "chat", "s1", "notes"]
    # a listing's '*' for the app or the session: the subtree above it, the prefix kept
    across = lambda s: s.list_namespaces(prefix=("alice", "*"))  # noqa: E731
    assert _read(store, rec, across) == (None, None, True)
    assert rec.calls[-1][1]["prefix"] == ["alice", "*"]
    sessions = lambda s: s.list_namespaces(prefix=("alice", "chat", "*"))  # noqa: E731
    assert _read(store, rec, sessions) == ("chat", None, True)
    any_app = lambda s: s.list_namespaces(prefix=("alice", "*", "s1"))  # noqa: E731
    assert _read(store, rec, any_app) == (None, None, True)  # a session within its app
    with pytest.raises(InvalidNamespaceError, match="'\\*' in a label"):
        store.search(("alice", "*"))  # a search's prefix is literal, as in LangGraph

    apps, rec2 = _store(namespace_map=by_position(session_id=None))
    rec2.ids["u"] = 2
    assert _read(apps, rec2, lambda s: s.search(("u", "chat"))) == ("chat", None, False)
    assert _read(apps, rec2, lambda s: s.search(("u",))) == (None, None, True)
    langmem, rec3 = _store(namespace_map=by_position(user=1, app_id=0, session_id=None))
    rec3.ids["u"] = 2
    assert _read(langmem, rec3, lambda s: s.search(("memories", "u"))) == ("memories", None, False)
    every = lambda s: s.list_namespaces(prefix=("*", "u"))  # noqa: E731
    assert _read(langmem, rec3, every) == (None, None, True)
    own, rec4 = _store(namespace_map=lambda ns: Scope(5, "x"))
    assert _read(own, rec4, lambda s: s.search(())) == ("x", None, False)  # a map of one's own


def test_reads_of_an_unknown_external_id_find_nothing_and_create_nothing() -> None:
    store, rec = _store()
    assert store.get(("nobody", "a"), "k") is None
    assert store.search(("nobody",)) == []
    assert store.list_namespaces(prefix=("nobody",)) == []
    assert rec.names() == ["resolve_user"] * 3  # looked up each time, never created
    assert all(kw["create"] is False for _, kw in rec.calls) and "nobody" not in rec.ids
    store.put(("nobody", "a"), "k", {"v": 1})
    assert rec.calls[-2] == ("resolve_user", {"external_id": "nobody", "create": True})
    assert store.get(("nobody", "a"), "k").value == {"v": 1}  # type: ignore[union-attr]
    assert rec.names()[-2:] == ["put_item", "get_item"]  # resolved once, kept

    # a batch putting for a new user creates it; its reads see the store before the puts
    rec.calls.clear()
    got = store.batch([GetOp(("zed", "a"), "k"), PutOp(("zed", "a"), "k", {"v": 2})])
    assert got == [None, None]
    assert rec.names() == ["resolve_user", "get_item", "put_item"]
    assert rec.calls[0][1]["create"] is True


def test_a_batch_reads_first_then_puts_the_last_value_of_each_key() -> None:
    store, rec = _store()
    results = store.batch(
        [
            PutOp(("bob", "a"), "k", {"v": 1}),
            GetOp(("bob", "a"), "k"),
            SearchOp(("bob",), {"v": 1}, 5, 2, "  "),
            PutOp(("bob", "a"), "k", {"v": 2}),
            ListNamespacesOp((MatchCondition("prefix", ("bob",)),), None, 10, 0),
        ]
    )
    assert results == [None, None, [], None, [("alice", "app")]]
    assert rec.names() == [
        "resolve_user",
        "get_item",
        "search_items",
        "list_item_namespaces",
        "put_item",
    ]
    search = rec.calls[2][1]
    assert (search["query"], search["filter"], search["limit"], search["offset"]) == (
        None,  # a blank query is no query
        {"v": 1},
        5,
        2,
    )
    assert rec.calls[-1][1]["value"] == {"v": 2}
    assert rec.calls[0][1]["create"] is True  # bob is put: resolved to be created
    assert search["subtree"] is True and rec.calls[3][1]["subtree"] is True  # ("bob",)
    assert store.get(("bob", "a"), "k").value == {"v": 2}  # type: ignore[union-attr]


def test_what_is_embedded_follows_the_store_fields_and_each_puts_index() -> None:
    store, rec = _store(index={"fields": ["text"]})
    store.put(("u", "a"), "1", {"text": "x"})
    store.put(("u", "a"), "2", {"text": "x"}, index=["title", "body"])
    store.put(("u", "a"), "3", {"text": "x"}, index=False)
    store.put(("u", "a"), "3", {"text": "x"}, index=[])
    store.put(("u", "a"), "6", {"text": "x"}, index=["authors[0].name", "$"])
    store.put(("u", "a"), "7", {"text": "x"}, index=["authors[0].name", "a.b"])
    for wildcard in ["items[*].text", "revisions[-1]", "{a,b}", "meta.*"]:
        with pytest.raises(ValueError, match="not wildcards"):
            store.put(("u", "a"), "8", {"text": "x"}, index=[wildcard])
    with pytest.raises(ValueError, match="not wildcards"):
        MemstreamStore(Recorder(), index={"fields": ["context[*].content"]})  # type: ignore[arg-type]
    store.delete(("u", "a"), "1")
    default, _ = _store()
    default.put(("u", "a"), "4", {"text": "x"})
    default.put(("u", "a"), "5", {"text": "x"}, index=["$"])
    sent = [kw["index"] for name, kw in rec.calls if name == "put_item"]
    assert sent == [
        ["text"],
        ["title", "body"],
        False,
        False,
        None,  # "$": the whole value
        ["authors.0.name", "a.b"],
        None,
    ]
    assert rec.calls[-1][1]["value"] is None  # a delete is a put of None
    assert [kw["index"] for _, kw in default._client.calls[1:]] == [None, None]  # type: ignore[union-attr]


def test_clear_errors_for_what_memstream_does_not_do() -> None:
    with pytest.raises(ValueError, match="embeds items on the server"):
        MemstreamStore(Recorder(), index={"dims": 3, "embed": lambda t: []})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        MemstreamStore(async_client=AsyncRecorder(Recorder()), url="http://x")  # type: ignore[arg-type]
    store, rec = _store()
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("u", "a"), "k", {"a": 1}, ttl=5)
    with pytest.raises(NotImplementedError, match="TTL"):
        store.batch([PutOp(("u", "a"), "k", {"a": 1}, ttl=5)])
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("u", "a.b"), "k", {"a": 1})])  # straight to batch, still checked
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "k", {"a": 1})])
    with pytest.raises(TypeError, match="a mapping"):
        store.batch([PutOp(("u", "a"), "k", ["not", "an", "object"])])  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError, match="'\\*' in a label"):
        store.search(("u", "*"))
    assert rec.calls == []


def test_async_batch_on_an_async_client_and_a_sync_only_store_in_a_thread() -> None:
    rec = Recorder()
    store = MemstreamStore(async_client=AsyncRecorder(rec))  # type: ignore[arg-type]

    async def run() -> None:
        await store.aput(("carol", "a"), "k", {"v": 1})
        got = await asyncio.gather(store.aget(("carol", "a"), "k"), store.aget(("dan",), "k"))
        assert got[0].value == {"v": 1} and got[1] is None  # type: ignore[union-attr]

    asyncio.run(run())
    assert rec.names().count("resolve_user") == 2  # carol, then dan
    assert "get_item" in rec.names() and "dan" not in rec.ids  # dan looked up, not created
    with pytest.raises(RuntimeError, match="only an AsyncClient"):
        store.get(("carol", "a"), "k")

    sync_only, rec2 = _store()
    asyncio.run(sync_only.aput(("erin", "a"), "k", {"v": 1}))
    assert rec2.names() == ["resolve_user", "put_item"]


def test_import_memstream_does_not_import_langgraph_and_a_missing_extra_is_named() -> None:
    code = "import sys, memstream; assert 'langgraph' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
    blocked = (
        "import sys; sys.modules['langgraph'] = None\n"
        "try:\n    import memstream.langgraph\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True)
    assert "pip install 'memstream[langgraph]'" in out.stdout, out.stderr
