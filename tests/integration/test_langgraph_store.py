"""``memstream.langgraph.MemstreamStore`` against the real API (uvicorn over the session's
Kafka, Redis, chDB and Milvus Lite, the ingest flow applying the puts): the behaviours of
LangGraph's own store tests (``libs/checkpoint/tests/test_store.py`` and the Postgres
store's ``test_store.py`` in langchain-ai/langgraph), run against ours.

Their namespaces (``("test", "docs")``, ``("a", "b", "c")``) name no user, so most tests
map every namespace to the test's own user (``one_user``): memstream keeps each user's
items apart, and a listing or a search reads one user's. What cannot hold on memstream is
asserted as our documented error (docs/api.md#langgraph-store): listing or searching
without a prefix that names the user, TTLs, an embedder of one's own. Semantic search is
memstream's recall (its embedder, its relevance), so where LangGraph's tests compare a
character-count embedding's exact scores these compare what a real embedder promises:
the right item first, a changed value found by its new words, an unindexed item never
ranked."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from memstream import Client
from memstream.errors import BadRequest, NotFound, Unauthenticated
from memstream.langgraph import MemstreamStore, Scope, by_position
from tests.helpers.api_server import make_key, running_api

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("langgraph-keys") / "api_keys.json"
    return {
        "path": path,
        "admin": make_key(path, "admin"),
        "notes": make_key(path, "app", ("notes",)),
    }


@pytest.fixture(scope="module")
def api_url(settings, stores, runtime, ingest, keys) -> Iterator[str]:
    update = {"api_keys_file": keys["path"]}
    with running_api(settings.model_copy(update=update), stores, runtime) as url:
        yield url


@pytest.fixture
def key(keys) -> str:
    return keys["admin"]


@pytest.fixture
def store(api_url, key, user_id) -> Iterator[MemstreamStore]:
    """Every namespace is the test's own user's (GLOBAL level): LangGraph's test layout."""
    with MemstreamStore(url=api_url, api_key=key, namespace_map=lambda ns: Scope(user_id)) as s:
        yield s


def _fill(store: MemstreamStore, puts: list[tuple[tuple[str, ...], str, dict[str, Any]]]) -> None:
    """Many puts at once (one abatch: concurrent calls), the tests' setup."""
    asyncio.run(store.abatch([PutOp(ns, key, value) for ns, key, value in puts]))


# -- put, get, update, delete ---------------------------------------------------------


def test_basic_store_ops(store: MemstreamStore) -> None:
    namespace = ("test", "documents")
    value = {"title": "Test Document", "content": "Hello, World!", "none": None, "n": [1, 2.5]}
    store.put(namespace, "doc1", value)
    item = store.get(namespace, "doc1")
    assert isinstance(item, Item) and not isinstance(item, SearchItem)
    assert (item.namespace, item.key, item.value) == (namespace, "doc1", value)  # as given
    assert item.created_at == item.updated_at

    updated = {"title": "Updated Document", "content": "Hello, Updated!"}
    store.put(namespace, "doc1", updated)
    again = store.get(namespace, "doc1")
    assert again is not None and again.value == updated
    assert again.updated_at > item.updated_at and again.created_at == item.created_at

    assert store.get(("test", "other_documents"), "doc1") is None
    store.delete(namespace, "doc1")
    assert store.get(namespace, "doc1") is None
    store.delete(namespace, "doc1")  # deleting what is gone is no error
    store.put(namespace, "doc1", {"back": True})  # and the key can be put again
    assert store.get(namespace, "doc1").value == {"back": True}  # type: ignore[union-attr]


def test_cannot_put_an_invalid_namespace_but_langgraph_root_past_the_put_api(
    store: MemstreamStore,
) -> None:
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(store.aput(bad, "foo", doc))

    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
    assert store.search(("foo", "langgraph", "foo"), query="bar")[0].value == doc
    store.delete(("foo", "langgraph", "foo"), "bar")
    assert store.get(("foo", "langgraph", "foo"), "bar") is None

    # past the public put API (LangGraph lets a batch's PutOp use the root "langgraph")
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert store.get(("langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
    assert store.search(("langgraph", "foo"))[0].value == doc
    store.delete(("langgraph", "foo"), "bar")
    assert store.get(("langgraph", "foo"), "bar") is None


def test_the_apis_own_refusals_surface_as_memstream_errors(store: MemstreamStore) -> None:
    with pytest.raises(BadRequest) as big:
        store.put(("test",), "big", {"text": "x" * 40_000})
    assert big.value.code == 40001
    with pytest.raises(BadRequest):
        store.put(("test",), "k" * 600, {"a": 1})  # a key of more than 512 characters
    with pytest.raises(BadRequest):
        store.put(tuple(f"l{i}" for i in range(9)), "k", {"a": 1})  # more than 8 labels
    with pytest.raises(BadRequest):
        store.search(("test",), limit=5000)
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("test",), "k", {"a": 1}, ttl=10)


# -- batches ----------------------------------------------------------------------------


def test_batch_order(store: MemstreamStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), {"data": "value1"}, 10, 0),
            ListNamespacesOp(None, None, 10, 0),
            GetOp(("test",), "key3"),
        ]
    )
    assert len(results) == 5
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[1] is None
    assert isinstance(results[2], list) and [i.key for i in results[2]] == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None

    reordered = store.batch(
        [
            SearchOp(("test",), None, 5, 0),
            GetOp(("test", "bar"), "key2"),
            ListNamespacesOp(None, None, 5, 0),
            PutOp(("test",), "key3", {"data": "value3"}),
            GetOp(("test", "foo"), "key1"),
            GetOp(("test",), "key3"),  # a read sees the store before the batch's puts
        ]
    )
    assert len(reordered[0]) == 2  # type: ignore[arg-type]
    assert reordered[1].value == {"data": "value2"}  # type: ignore[union-attr]
    assert reordered[2] == [("test", "bar"), ("test", "foo")] and reordered[3] is None
    assert reordered[4].key == "key1" and reordered[5] is None  # type: ignore[union-attr]
    assert store.get(("test",), "key3").value == {"data": "value3"}  # type: ignore[union-attr]


def test_batch_put_get_search_and_list_ops(store: MemstreamStore) -> None:
    results = store.batch(
        [
            PutOp(("test",), "key1", {"data": "value1"}),
            PutOp(("test",), "key2", {"data": "value2"}),
            PutOp(("test",), "key3", None),  # a delete of nothing
            PutOp(("test",), "key2", {"data": "last wins"}),
        ]
    )
    assert results == [None, None, None, None]
    got = store.batch([GetOp(("test",), "key1"), GetOp(("test",), "key2"), GetOp(("test",), "k3")])
    assert [g.value if g else None for g in got] == [  # type: ignore[union-attr]
        {"data": "value1"},
        {"data": "last wins"},
        None,
    ]

    _fill(
        store,
        [
            (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
            (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
            (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
        ],
    )
    found = store.batch(
        [
            SearchOp(("test",), {"tag": "a"}, 10, 0),
            SearchOp(("test",), None, 2, 0),
            SearchOp(("test", "foo"), None, 10, 0),
        ]
    )
    assert sorted(i.key for i in found[0]) == ["key1", "key2"]  # type: ignore[union-attr]
    assert len(found[1]) == 2  # type: ignore[arg-type]
    assert [(i.namespace, i.key) for i in found[2]] == [(("test", "foo"), "key1")]  # type: ignore[union-attr]

    listed = store.batch(
        [
            ListNamespacesOp(None, None, 10, 0),
            ListNamespacesOp(None, 1, 10, 0),
            ListNamespacesOp((MatchCondition("suffix", ("baz",)),), None, 10, 0),
        ]
    )
    assert listed == [
        [("test",), ("test", "bar"), ("test", "baz"), ("test", "foo")],
        [("test",)],
        [("test", "baz")],
    ]


# -- search ----------------------------------------------------------------------------


def test_search_filters_and_pages(store: MemstreamStore) -> None:
    _fill(
        store,
        [
            (("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "score": 4.5}),
            (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "score": 3.0}),
            (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "score": 4.0}),
        ],
    )
    assert len(store.search(("test",))) == 3
    docs = store.search(("test", "docs"))
    assert {i.key for i in docs} == {"doc1", "doc2"}
    assert all(i.namespace == ("test", "docs") and i.score is None for i in docs)
    assert {i.key for i in store.search(("test",), filter={"author": "Alice"})} == {"doc1", "img1"}
    assert {i.key for i in store.search(("test",), filter={"score": {"$gt": 3.2}})} == {
        "doc1",
        "img1",
    }
    both = store.search(("test",), filter={"score": {"$gte": 4.0}, "author": {"$ne": "Bob"}})
    assert {i.key for i in both} == {"doc1", "img1"}
    assert store.search(("test",), filter={"author": "Carol"}) == []
    store.put(("meta",), "m1", {"meta": {"lang": "en", "pages": 12}, "title": "x"})
    store.put(("meta",), "m2", {"meta": {"lang": "fr", "pages": 3}, "title": "y"})
    nested = store.search(("meta",), filter={"meta": {"lang": "en"}})
    assert [i.key for i in nested] == ["m1"]
    deep_op = store.search(("meta",), filter={"meta": {"pages": {"$lt": 5}}})
    assert [i.key for i in deep_op] == ["m2"]

    # without a query, the most recently updated first; pages do not overlap
    assert len(store.search(("test",), limit=2)) == 2
    pages = [store.search(("test",), limit=1, offset=n)[0].key for n in range(3)]
    assert sorted(pages) == ["doc1", "doc2", "img1"]
    assert len(store.search(("test",), offset=2)) == 1
    assert store.search(("nothing",)) == []


def test_semantic_search_ranks_by_meaning_and_follows_updates(store: MemstreamStore) -> None:
    _fill(
        store,
        [
            (("test",), "doc1", {"text": "zany zebra Xerxes"}),
            (("test",), "doc2", {"text": "something about dogs"}),
            (("test",), "doc3", {"text": "text about birds"}),
        ],
    )
    first = store.search(("test",), query="a zebra named Xerxes")
    assert first[0].key == "doc1" and first[0].score is not None
    assert all(isinstance(r, SearchItem) and r.score is not None for r in first)

    store.put(("test",), "doc1", {"text": "new text about cats and kittens"})
    after = store.search(("test",), query="a zebra named Xerxes")
    assert after[0].key != "doc1" or after[0].score < first[0].score  # type: ignore[operator]
    assert store.search(("test",), query="kittens")[0].key == "doc1"

    # not indexed: found by get, filter and listing, never ranked by a query
    store.put(("test",), "doc4", {"text": "kittens and cats again"}, index=False)
    ranked = store.search(("test",), query="kittens", limit=10)
    assert "doc4" not in {r.key for r in ranked if r.score is not None}
    assert store.get(("test",), "doc4") is not None
    assert [r.key for r in store.search(("test",), filter={"text": "kittens and cats again"})] == [
        "doc4"
    ]


def test_semantic_search_with_filters_and_pages(store: MemstreamStore) -> None:
    _fill(
        store,
        [
            (("test",), "doc1", {"text": "red apple", "color": "red", "score": 4.5}),
            (("test",), "doc2", {"text": "red car", "color": "red", "score": 3.0}),
            (("test",), "doc3", {"text": "green apple", "color": "green", "score": 4.0}),
            (("test",), "doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
        ],
    )
    red_fruit = store.search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in red_fruit][:1] == ["doc1"] and len(red_fruit) == 2
    red_car = store.search(("test",), query="car", filter={"color": "red"})
    assert [r.key for r in red_car][:1] == ["doc2"] and len(red_car) == 2
    blue = store.search(("test",), query="a blue vehicle", filter={"score": {"$gt": 3.2}})
    assert len(blue) == 3 and blue[0].key == "doc4"
    green = store.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert [r.key for r in green] == ["doc3"]

    page1 = store.search(("test",), query="car", limit=2)
    page2 = store.search(("test",), query="car", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert not {r.key for r in page1} & {r.key for r in page2}
    assert len(store.search(("test",), query="car", limit=10)) == 4

    for query in ["", None, "test " * 100, "test!@#$%^&*()"]:
        assert len(store.search(("test",), query=query)) == 4


def test_index_fields_of_the_store_and_of_each_put(api_url, key, user_id) -> None:
    with MemstreamStore(
        url=api_url,
        api_key=key,
        namespace_map=lambda ns: Scope(user_id),
        index={"fields": ["key1", "key3"]},  # key2 is never embedded
    ) as store:
        _fill(
            store,
            [
                (("test",), "doc1", {"key1": "a violin concert", "key2": "tax forms"}),
                (("test",), "doc2", {"key2": "a violin concert", "key3": "volcano eruption"}),
            ],
        )
        assert store.search(("test",), query="violin music")[0].key == "doc1"
        assert store.search(("test",), query="lava from a volcano")[0].key == "doc2"

        # a put's own index wins over the store's
        store.put(("other",), "doc3", {"key0": "ancient rome", "key1": "chess"}, index=["key0"])
        store.put(("other",), "doc4", {"key0": "chess openings", "key1": "rome"}, index=["key0"])
        assert store.search(("other",), query="the roman empire")[0].key == "doc3"
        assert store.search(("other",), query="chess strategy")[0].key == "doc4"
        store.put(
            ("nested",),
            "doc6",
            {"meta": {"title": "deep sea fish"}, "tags": ["x", "coral"]},
            index=["meta.title", "tags[1]"],
        )
        store.put(("nested",), "doc7", {"meta": {"title": "mountain goats"}}, index=["meta.title"])
        assert store.search(("nested",), query="coral reef")[0].key == "doc6"
        assert store.search(("nested",), query="goats on a mountain")[0].key == "doc7"
        store.put(("other",), "doc5", {"key0": "ancient rome"}, index=False)
        ranked = store.search(("other",), query="the roman empire")
        assert "doc5" not in {r.key for r in ranked if r.score is not None}

    with pytest.raises(ValueError, match="embeds items on the server"):
        MemstreamStore(url=api_url, api_key=key, index={"dims": 1536, "embed": "openai:x"})


def test_non_ascii(store: MemstreamStore) -> None:
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    _fill(store, [(("user_123", "memories"), str(i), {"text": t}) for i, t in enumerate(texts)])
    for i, text in enumerate(texts):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)
        assert store.get(("user_123", "memories"), str(i)).value == {"text": text}  # type: ignore[union-attr]


# -- list_namespaces ---------------------------------------------------------------------


def test_list_namespaces_prefix_suffix_depth_pages_and_wildcards(store: MemstreamStore) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    _fill(store, [(ns, f"id_{i}", {"data": f"value_{i:02d}"}) for i, ns in enumerate(namespaces)])
    ls = store.list_namespaces
    assert ls() == sorted(namespaces)
    assert ls(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert ls(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert ls(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert ls(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert ls(max_depth=2) == [
        ("a", "b"),
        ("a", "c"),
        ("admin", "users"),
        ("b", "a"),
        ("users", "123"),
        ("users", "456"),
    ]
    assert ls(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert ls(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert ls(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert ls(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert ls(prefix=("users", "*")) == [("users", "123"), ("users", "456", "settings")]
    assert ls(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert ls(prefix=("nonexistent",)) == []
    assert ls(prefix=("users", "123")) == [("users", "123")]

    # a namespace whose last item is deleted is no longer listed
    store.delete(("users", "123"), "id_6")
    assert ls(prefix=("users",)) == [("users", "456", "settings")]


def test_list_namespaces_pagination(store: MemstreamStore) -> None:
    _fill(store, [(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"i": i}) for i in range(20)])
    for offset in (0, 5, 15):
        assert store.list_namespaces(prefix=("namespace",), limit=5, offset=offset) == [
            ("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)
        ]


def test_list_namespaces_empty(store: MemstreamStore) -> None:
    assert store.list_namespaces() == []


# -- async ----------------------------------------------------------------------------


def test_async_variants_and_concurrent_calls(api_url, key, user_id) -> None:
    async def run() -> None:
        async with MemstreamStore(
            url=api_url, api_key=key, namespace_map=lambda ns: Scope(user_id)
        ) as store:
            docs = [
                (f"doc{i}", {"text": f"{c} {thing}", "color": c, "index": i})
                for i, (c, thing) in enumerate(
                    [("red", "apple"), ("blue", "car"), ("green", "house"), ("red", "car")]
                )
            ]
            await asyncio.gather(*(store.aput(("test",), k, v) for k, v in docs))
            await asyncio.gather(*(store.adelete(("test",), k) for k, _ in docs))
            assert await store.asearch(("test",)) == []
            await asyncio.gather(*(store.aput(("test",), k, v) for k, v in docs))
            got = await asyncio.gather(store.aget(("test",), "doc0"), store.aget(("test",), "x"))
            assert got[0] is not None and got[0].value == docs[0][1] and got[1] is None

            searches = await asyncio.gather(
                store.asearch(("test",), query="apple", filter={"color": "red"}),
                store.asearch(("test",), query="car", filter={"index": {"$gt": 1}}),
                store.asearch(("test",), filter={"color": "red"}),
            )
            assert searches[0][0].key == "doc0"
            assert [r.key for r in searches[1]] == ["doc3", "doc2"]
            assert {r.key for r in searches[2]} == {"doc0", "doc3"}
            assert await store.alist_namespaces(prefix=("test",)) == [("test",)]
            results = await store.abatch(
                [GetOp(("test",), "doc1"), PutOp(("test",), "doc1", None), GetOp(("test",), "doc1")]
            )
            assert results[0] is not None and results[2] is not None  # reads before puts
            assert await store.aget(("test",), "doc1") is None

    asyncio.run(run())


def test_async_on_a_sync_client_runs_in_a_thread(api_url, key, user_id) -> None:
    with Client(api_url, key) as client:
        store = MemstreamStore(client, namespace_map=lambda ns: Scope(user_id))
        asyncio.run(store.aput(("t",), "k", {"a": 1}))
        assert store.get(("t",), "k").value == {"a": 1}  # type: ignore[union-attr]


# -- the default namespaces: (user, app_id[, session_id]) --------------------------------


def test_default_namespaces_are_user_app_session_with_external_ids(api_url, key) -> None:
    alice, bob = f"alice-{uuid.uuid4().hex}", f"bob-{uuid.uuid4().hex}"
    with MemstreamStore(url=api_url, api_key=key) as store:
        store.put((alice, "notes"), "tea", {"text": "likes green tea"})
        store.put((alice, "notes", "s1"), "trip", {"text": "plans a trip to Kyoto"})
        store.put((alice,), "name", {"text": "Alice"})
        store.put((bob, "notes"), "tea", {"text": "likes coffee"})
        ids = store.resolved_users()
        assert set(ids) == {alice, bob} and ids[alice] != ids[bob]

        assert store.get((alice, "notes"), "tea").value == {"text": "likes green tea"}  # type: ignore[union-attr]
        assert store.get((bob, "notes"), "tea").value == {"text": "likes coffee"}  # type: ignore[union-attr]
        # a prefix reads what lies beneath it: (alice,) her GLOBAL items, apps and
        # sessions; (alice, notes) the app's and its sessions'; a session itself
        assert {i.key for i in store.search((alice,))} == {"name", "tea", "trip"}
        assert {i.key for i in store.search((alice, "notes"))} == {"tea", "trip"}
        assert [i.key for i in store.search((alice, "notes", "s1"))] == ["trip"]
        assert store.search((alice,), query="a trip to Japan")[0].key == "trip"
        assert [i.key for i in store.search((bob, "notes"), query="Kyoto")] == ["tea"]  # bob's
        assert store.search((alice,), filter={"text": "Alice"})[0].namespace == (alice,)
        everything = [(alice,), (alice, "notes"), (alice, "notes", "s1")]
        assert store.list_namespaces(prefix=(alice,)) == everything
        assert store.list_namespaces(prefix=(alice, "*")) == everything[1:]  # any app
        assert store.list_namespaces(prefix=(alice, "notes", "*")) == everything[2:]
        assert store.list_namespaces(prefix=(alice,), max_depth=2) == everything[:2]
        assert store.list_namespaces(prefix=(alice, "notes", "s1")) == everything[2:]

        # what memstream cannot do: a search or a listing across users
        for call in (
            lambda: store.list_namespaces(),
            lambda: store.list_namespaces(suffix=("notes",)),
            lambda: store.search(()),
        ):
            with pytest.raises(InvalidNamespaceError, match="names the user"):
                call()
        with pytest.raises(InvalidNamespaceError, match="'\\*' in a label"):
            store.list_namespaces(prefix=("*", "notes"))

        # closing the session leaves its items (a session's items are the agent's own)
        with Client(api_url, key) as client:
            client.session_close(ids[alice], "s1", app_id="notes")
        assert store.get((alice, "notes", "s1"), "trip") is not None

    # the external id is durable: another store (another process) finds the same user
    with MemstreamStore(url=api_url, api_key=key) as other:
        assert other.get((alice, "notes"), "tea") is not None
        assert other.resolved_users()[alice] == ids[alice]

        # a whole purge by the external id: the string names a new user afterwards
        with Client(api_url, key) as client:
            client.purge(external_id=alice)
        assert other.get((alice, "notes"), "tea") is None
        other.forget_users(alice)
        other.put((alice, "notes"), "tea", {"text": "a new alice"})
        assert other.resolved_users()[alice] != ids[alice]
        assert other.get((alice, "notes"), "tea").value == {"text": "a new alice"}  # type: ignore[union-attr]


def test_an_app_key_writes_only_its_apps(api_url, keys) -> None:
    user = f"user-{uuid.uuid4().hex}"
    with MemstreamStore(url=api_url, api_key=keys["notes"]) as store:
        store.put((user, "notes"), "k", {"a": 1})
        assert store.get((user, "notes"), "k") is not None
        with pytest.raises(Unauthenticated, match="billing") as refused:
            store.put((user, "billing"), "k", {"a": 1})  # another app's
        assert refused.value.code == 40101 and refused.value.trace_id
        with pytest.raises(Unauthenticated):
            store.put((user,), "k", {"a": 1})  # GLOBAL: only with the global grant
        with pytest.raises(Unauthenticated):
            store.search((user, "billing"))


def test_a_prefix_search_across_apps_and_sessions_sees_only_the_keys_apps(api_url, keys) -> None:
    user = f"user-{uuid.uuid4().hex}"
    with MemstreamStore(url=api_url, api_key=keys["admin"]) as admin:
        admin.put((user,), "name", {"text": "Dana"})
        admin.put((user, "notes"), "tea", {"text": "likes oolong tea"})
        admin.put((user, "notes", "s1"), "trip", {"text": "flies to Lisbon on Friday"})
        admin.put((user, "billing"), "card", {"text": "pays by card"})
        admin.put((user, "billing", "s2"), "refund", {"text": "asked for a refund"})
        assert {i.key for i in admin.search((user,))} == {"name", "tea", "trip", "card", "refund"}
        assert {i.key for i in admin.search((user, "billing"))} == {"card", "refund"}
    with MemstreamStore(url=api_url, api_key=keys["notes"]) as store:
        assert {i.key for i in store.search((user,))} == {"name", "tea", "trip"}
        assert {i.key for i in store.search((user,), query="refund")} == {"name", "tea", "trip"}
        assert store.list_namespaces(prefix=(user,)) == [
            (user,),
            (user, "notes"),
            (user, "notes", "s1"),
        ]
        assert store.list_namespaces(prefix=(user, "*")) == [(user, "notes"), (user, "notes", "s1")]
        with pytest.raises(Unauthenticated):
            store.search((user, "billing"))  # another app's subtree: refused
        found = asyncio.run(store.asearch((user, "notes"), query="Lisbon"))
        assert found[0].key == "trip" and found[0].namespace == (user, "notes", "s1")


def test_reads_of_an_unknown_external_id_create_no_user(api_url, key) -> None:
    ghost = f"ghost-{uuid.uuid4().hex}"
    with MemstreamStore(url=api_url, api_key=key) as store:
        assert store.get((ghost, "notes"), "k") is None
        assert store.search((ghost,)) == []
        assert store.list_namespaces(prefix=(ghost,)) == []
        assert asyncio.run(store.asearch((ghost, "notes"))) == []
        assert asyncio.run(store.aget((ghost,), "k")) is None
        assert ghost not in store.resolved_users()
        with Client(api_url, key) as client, pytest.raises(NotFound):
            client.resolve_user(ghost, create=False)  # the reads created nobody
        store.put((ghost, "notes"), "k", {"text": "now here"})
        assert [i.key for i in store.search((ghost,))] == ["k"]
        with Client(api_url, key) as client:
            assert client.resolve_user(ghost, create=False) == store.resolved_users()[ghost]


def test_collections_nested_in_an_app_without_sessions(api_url, key) -> None:
    user = f"user-{uuid.uuid4().hex}"
    with MemstreamStore(
        url=api_url, api_key=key, namespace_map=by_position(session_id=None)
    ) as store:
        store.put((user, "chat", "profile"), "name", {"text": "Dana"})
        store.put((user, "chat", "notes"), "tea", {"text": "likes oolong tea"})
        store.put((user, "chat"), "root", {"text": "top"})
        assert {i.key for i in store.search((user, "chat"))} == {"name", "tea", "root"}
        assert [i.key for i in store.search((user, "chat", "notes"))] == ["tea"]
        assert store.search((user, "chat"), query="which tea?")[0].key == "tea"
        assert store.list_namespaces(prefix=(user, "chat")) == [
            (user, "chat"),
            (user, "chat", "notes"),
            (user, "chat", "profile"),
        ]
        assert store.list_namespaces(prefix=(user, "chat", "*")) == [
            (user, "chat", "notes"),
            (user, "chat", "profile"),
        ]
