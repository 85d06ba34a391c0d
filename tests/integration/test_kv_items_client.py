"""Key-value items through the Python clients (sync and async) and app keys: put_item,
get_item (None when absent), search_items, list_item_namespaces; one app's items never
seen by another's key, GLOBAL items written only with the global grant, tenants apart."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memstream import AsyncClient, Client
from memstream.errors import BadRequest, CapacityFull, Unauthenticated
from tests.helpers.api_server import make_key, running_api

pytestmark = pytest.mark.integration


class Keys:
    def __init__(self, path):
        self.path = path
        self.app_a = make_key(path, "app", ("appA",))
        self.app_b = make_key(path, "app", ("appB",))
        self.admin = make_key(path, "admin")
        self.other_tenant = make_key(path, "admin", tenant="tenant-x")


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> Keys:
    return Keys(tmp_path_factory.mktemp("item-keys") / "api_keys.json")


@pytest.fixture(scope="module")
def api_url(settings, stores, runtime, ingest, keys):
    s = settings.model_copy(update={"api_keys_file": keys.path})
    with running_api(s, stores, runtime) as url:
        yield url


class Driven:
    """A sync or an async client behind one sync face."""

    def __init__(self, client: Client | AsyncClient, loop: asyncio.AbstractEventLoop | None):
        self.client, self.loop = client, loop

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.client, name)
        if self.loop is None or not callable(attr):
            return attr
        return lambda *a, **kw: self.loop.run_until_complete(attr(*a, **kw))


@pytest.fixture(params=["sync", "async"])
def connect(request):
    loop = asyncio.new_event_loop() if request.param == "async" else None
    made: list[Client | AsyncClient] = []

    def make(url: str, key: str | None = None) -> Driven:
        client = (AsyncClient if loop else Client)(url, key)
        made.append(client)
        return Driven(client, loop)

    yield make
    for client in made:
        if loop is None:
            client.close()
        else:
            loop.run_until_complete(client.aclose())
    if loop is not None:
        loop.close()


def test_the_client_puts_gets_searches_and_lists(connect, api_url, keys, user_id) -> None:
    memory = connect(api_url, keys.app_a)
    value = {"b": None, "a": [1, {"c": None}], "text": "likes jazz"}
    put = memory.put_item(user_id, ["prefs"], "music", value, app_id="appA")
    assert put.op == "put" and put.memory_id.startswith("i_")
    item = memory.get_item(user_id, ["prefs"], "music", app_id="appA")
    assert item is not None and item.value == value and list(item.value) == ["b", "a", "text"]
    assert memory.get_item(user_id, ["prefs"], "absent", app_id="appA") is None

    memory.put_item(user_id, ["prefs", "deep"], "x", {"n": None}, app_id="appA", index=False)
    found = memory.search_items(user_id, ["prefs", "deep"], app_id="appA", filter={"n": None})
    assert [i.key for i in found.items] == ["x"]  # a null to match is sent as null
    # a field the value lacks reads as null (LangGraph's own store does the same)
    assert (
        len(memory.search_items(user_id, ["prefs"], app_id="appA", filter={"n": None}).items) == 2
    )
    ranked = memory.search_items(user_id, app_id="appA", query="jazz music")
    assert ranked.items[0].key == "music" and ranked.items[0].score is not None
    names = memory.list_item_namespaces(user_id, app_id="appA", max_depth=1)
    assert names.namespaces == [["prefs"]]

    assert memory.put_item(user_id, ["prefs"], "music", None, app_id="appA").op == "delete"
    assert memory.get_item(user_id, ["prefs"], "music", app_id="appA") is None


def test_app_keys_see_their_own_apps_items_only(connect, api_url, keys, user_id) -> None:
    a, b = connect(api_url, keys.app_a), connect(api_url, keys.app_b)
    a.put_item(user_id, ["n"], "k", {"v": "a"}, app_id="appA")
    with pytest.raises(Unauthenticated):
        b.get_item(user_id, ["n"], "k", app_id="appA")
    with pytest.raises(Unauthenticated):
        b.search_items(user_id, app_id="appA")
    assert b.search_items(user_id, app_id="appB").items == []
    with pytest.raises(Unauthenticated):  # GLOBAL needs the global grant
        a.put_item(user_id, ["n"], "k", {"v": "g"})

    admin = connect(api_url, keys.admin)
    admin.put_item(user_id, ["n"], "k", {"v": "global"})
    assert a.get_item(user_id, ["n"], "k").value == {"v": "global"}  # readable GLOBAL
    other = connect(api_url, keys.other_tenant)
    assert other.get_item(user_id, ["n"], "k") is None
    assert other.search_items(user_id, app_id="appA").items == []


def test_a_subtree_read_by_an_app_key_leaves_other_apps_out(
    connect, api_url, keys, user_id
) -> None:
    admin = connect(api_url, keys.admin)
    for ns, key, app, session in (
        (["n"], "global", None, None),
        (["n"], "a", "appA", None),
        (["n", "s"], "a-s1", "appA", "s1"),
        (["n"], "b", "appB", None),
        (["n", "s"], "b-s1", "appB", "s1"),
    ):
        admin.put_item(user_id, ns, key, {"v": key}, app_id=app, session_id=session)
    a, b = connect(api_url, keys.app_a), connect(api_url, keys.app_b)

    def keys_of(page) -> list[str]:
        return sorted(i.key for i in page.items)

    # from GLOBAL: the GLOBAL items and the key's own apps' and sessions', never appB's
    assert keys_of(a.search_items(user_id, subtree=True)) == ["a", "a-s1", "global"]
    assert keys_of(a.search_items(user_id, ["n", "s"], subtree=True)) == ["a-s1"]
    assert keys_of(a.search_items(user_id, subtree=True, query="b-s1")) == ["a", "a-s1", "global"]
    assert keys_of(b.search_items(user_id, subtree=True)) == ["b", "b-s1", "global"]
    assert keys_of(admin.search_items(user_id, subtree=True)) == [
        "a",
        "a-s1",
        "b",
        "b-s1",
        "global",
    ]
    assert keys_of(a.search_items(user_id, app_id="appA", subtree=True)) == ["a", "a-s1"]
    assert a.list_item_namespaces(user_id, subtree=True).namespaces == [["n"], ["n", "s"]]
    session = a.search_items(user_id, app_id="appA", session_id="s1", subtree=True).items
    assert [(i.key, i.app_id, i.session_id) for i in session] == [("a-s1", "appA", "s1")]
    with pytest.raises(Unauthenticated):  # another app's subtree: refused, not emptied
        a.search_items(user_id, app_id="appB", subtree=True)
    with pytest.raises(Unauthenticated):
        a.list_item_namespaces(user_id, app_id="appB", subtree=True)
    other = connect(api_url, keys.other_tenant)
    assert other.search_items(user_id, subtree=True).items == []


@pytest.fixture
def item_limit_3(runtime):
    """The writer's settings with an item limit of 3 for app ``appL`` (a live setting)."""
    held = runtime.settings
    runtime.settings = held.model_copy(update={"app_overrides": {"appL": {"item_limit": 3}}})
    yield
    runtime.settings = held


def test_the_item_limit_answers_42901(connect, api_url, keys, user_id, item_limit_3) -> None:
    memory = connect(api_url, keys.admin)
    for k in ("1", "2", "3"):
        assert memory.put_item(user_id, ["lim"], k, {"k": k}, app_id="appL").op == "put"
    with pytest.raises(CapacityFull, match="item limit"):
        memory.put_item(user_id, ["lim"], "4", {"k": "4"}, app_id="appL")
    # a replace is no new item; another app's scope has its own limit
    assert memory.put_item(user_id, ["lim"], "1", {"k": "one"}, app_id="appL").op == "put"
    assert memory.put_item(user_id, ["lim"], "4", {"k": "4"}, app_id="appM").op == "put"
    memory.put_item(user_id, ["lim"], "2", None, app_id="appL")
    assert memory.put_item(user_id, ["lim"], "4", {"k": "4"}, app_id="appL").op == "put"
    with pytest.raises(BadRequest):
        memory.put_item(user_id, ["a.b"], "k", {"v": 1}, app_id="appL")
