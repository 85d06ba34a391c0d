"""Key-value items through HTTP → memory.commands → the keyed writer → the stores
(docs/api.md#key-value-items): put, get, replace, delete, history, search, namespaces."""

from __future__ import annotations

import json

import pytest

from memstream.schemas.enums import MemType, Status

pytestmark = pytest.mark.integration

V1 = "/memory/v1"


def put(api, user_id, ns, key, value, **extra) -> dict:
    body = {"user_id": user_id, "namespace": ns, "key": key, "value": value, **extra}
    return api.post(f"{V1}/items/put", json=body).json()


def get(api, user_id, ns, key, **extra) -> dict:
    body = {"user_id": user_id, "namespace": ns, "key": key, **extra}
    return api.post(f"{V1}/items/get", json=body).json()


def search(api, user_id, **body) -> list[dict]:
    answer = api.post(f"{V1}/items/search", json={"user_id": user_id, **body}).json()
    assert answer["code"] == 0, answer
    return answer["data"]["items"]


def test_put_get_replace_delete_and_history(api, runtime, ingest, user_id) -> None:
    value = {"z": 1, "a": {"nested": [1, 2.5, "ü", None, True]}, "text": "I like green tea"}
    first = put(api, user_id, ["prefs", "food"], "tea", value, app_id="agent")
    assert first["code"] == 0 and first["data"]["op"] == "put", first
    memory_id = first["data"]["memory_id"]
    assert memory_id.startswith("i_")

    got = get(api, user_id, ["prefs", "food"], "tea", app_id="agent")
    assert got["code"] == 0, got
    item = got["data"]["item"]
    # the value exactly as given, key order included
    assert json.dumps(item["value"]) == json.dumps(value)
    assert item["namespace"] == ["prefs", "food"] and item["key"] == "tea"
    assert item["memory_id"] == memory_id and item["score"] is None

    same = put(api, user_id, ["prefs", "food"], "tea", value, app_id="agent")
    assert same["data"] == {"memory_id": memory_id, "op": "none"}

    second = put(api, user_id, ["prefs", "food"], "tea", {"text": "now coffee"}, app_id="agent")
    assert second["data"] == {"memory_id": memory_id, "op": "put"}
    again = get(api, user_id, ["prefs", "food"], "tea", app_id="agent")["data"]["item"]
    assert again["value"] == {"text": "now coffee"}
    assert again["created_at"] == item["created_at"] and again["updated_at"] > item["updated_at"]

    stored = runtime.memories.get(user_id, memory_id, tenant="default")
    assert stored.mem_type is MemType.ITEM and stored.status is Status.ACTIVE
    assert stored.ownership == "AGENT" and stored.level == "APP"
    # the value is sealed at rest like every memory's words
    raw = runtime.stores.clickhouse.query(
        "SELECT content FROM memstream.memories WHERE memory_id = {m:String}", {"m": memory_id}
    )
    assert raw and all("coffee" not in str(r[0]) for r in raw)

    gone = put(api, user_id, ["prefs", "food"], "tea", None, app_id="agent")
    assert gone["data"] == {"memory_id": memory_id, "op": "delete"}
    assert get(api, user_id, ["prefs", "food"], "tea", app_id="agent")["code"] == 40401
    assert put(api, user_id, ["prefs", "food"], "tea", None, app_id="agent")["data"]["op"] == "none"

    history = api.post(f"{V1}/history", json={"user_id": user_id, "memory_id": memory_id}).json()
    assert history["code"] == 0, history
    ops = [c["op_type"] for c in history["data"]["changes"]]
    assert ops == ["ADD", "UPDATE", "DELETE"], ops


def test_scopes_are_apart_and_a_request_id_is_idempotent(api, ingest, user_id) -> None:
    a = put(api, user_id, ["n"], "k", {"v": "a"}, app_id="app-a", request_id="r1")
    b = put(api, user_id, ["n"], "k", {"v": "b"}, app_id="app-b")
    g = put(api, user_id, ["n"], "k", {"v": "global"})
    assert len({a["data"]["memory_id"], b["data"]["memory_id"], g["data"]["memory_id"]}) == 3
    assert get(api, user_id, ["n"], "k", app_id="app-a")["data"]["item"]["value"] == {"v": "a"}
    assert get(api, user_id, ["n"], "k")["data"]["item"]["value"] == {"v": "global"}
    assert [i["value"] for i in search(api, user_id, app_id="app-b")] == [{"v": "b"}]
    # the same request again: the same answer; another request under its id: 40901
    resent = put(api, user_id, ["n"], "k", {"v": "a"}, app_id="app-a", request_id="r1")
    assert resent == a
    other = put(api, user_id, ["n"], "k", {"v": "x"}, app_id="app-a", request_id="r1")
    assert other["code"] == 40901, other


def test_search_by_query_filter_and_recency(api, ingest, user_id) -> None:
    ns = ["memories", "u1"]
    put(api, user_id, ns, "1", {"text": "The user likes hiking in the mountains", "n": 3})
    put(api, user_id, ns, "2", {"text": "The user's cat is called Miso", "n": 7, "tag": "pet"})
    put(api, user_id, ns, "3", {"text": "Prefers dark roast coffee", "n": 5, "tag": "food"})
    put(api, user_id, ["other"], "4", {"text": "A cat sat on a mat", "n": 9}, index=[])

    hits = search(api, user_id, namespace_prefix=ns, query="what is the name of my cat?")
    assert [h["key"] for h in hits][0] == "2"
    assert all(isinstance(h["score"], float) for h in hits)
    assert hits[0]["score"] >= hits[-1]["score"]

    # not embedded: never ranked by the query, still found after the ranked ones
    everything = search(api, user_id, query="cat", limit=10)
    assert everything[-1]["key"] == "4" and everything[-1]["score"] is None

    recent = search(api, user_id)
    assert [h["key"] for h in recent] == ["4", "3", "2", "1"]
    assert all(h["score"] is None for h in recent)
    assert [h["key"] for h in search(api, user_id, limit=2, offset=1)] == ["3", "2"]

    def keys(flt: dict) -> list[str]:
        return sorted(h["key"] for h in search(api, user_id, filter=flt))

    assert keys({"tag": "pet"}) == ["2"]
    assert keys({"n": {"$gt": 4}}) == ["2", "3", "4"]
    assert keys({"n": {"$gte": 5, "$lt": 9}}) == ["2", "3"]
    assert keys({"n": {"$lte": 3}}) == ["1"]
    assert keys({"tag": {"$ne": "pet"}}) == ["1", "3", "4"]
    assert keys({"n": {"$eq": 7}, "tag": "pet"}) == ["2"]
    assert keys({"n": {"$gt": "a string"}}) == []  # incomparable: no match, never a 500
    bad = api.post(
        f"{V1}/items/search", json={"user_id": user_id, "filter": {"n": {"$regex": "x"}}}
    ).json()
    assert bad["code"] == 40001, bad


def test_index_fields_embed_only_those_fields(api, ingest, user_id) -> None:
    ns = ["docs"]
    put(
        api, user_id, ns, "a", {"title": "Quarterly tax report", "body": "bananas"}, index=["title"]
    )
    put(api, user_id, ns, "b", {"title": "Fruit list", "body": "tax tax tax"}, index=["title"])
    hits = search(api, user_id, namespace_prefix=ns, query="tax report")
    assert hits[0]["key"] == "a"


def test_namespaces_with_prefix_suffix_and_depth(api, ingest, user_id) -> None:
    for ns in (["a", "b", "c"], ["a", "b", "d"], ["a", "x"], ["z", "b", "c"]):
        assert put(api, user_id, ns, "k", {"v": 1}, app_id="ns-app")["code"] == 0

    def names(**body) -> list[list[str]]:
        answer = api.post(
            f"{V1}/items/namespaces", json={"user_id": user_id, "app_id": "ns-app", **body}
        ).json()
        assert answer["code"] == 0, answer
        return answer["data"]["namespaces"]

    assert names() == [["a", "b", "c"], ["a", "b", "d"], ["a", "x"], ["z", "b", "c"]]
    assert names(prefix=["a"]) == [["a", "b", "c"], ["a", "b", "d"], ["a", "x"]]
    assert names(suffix=["c"]) == [["a", "b", "c"], ["z", "b", "c"]]
    assert names(prefix=["*", "b"]) == [["a", "b", "c"], ["a", "b", "d"], ["z", "b", "c"]]
    assert names(max_depth=2) == [["a", "b"], ["a", "x"], ["z", "b"]]
    assert names(max_depth=1, limit=1, offset=1) == [["z"]]
    assert names(app_id="other-app") == []


def test_subtree_reads_the_scope_and_the_scopes_beneath_it(api, runtime, ingest, user_id) -> None:
    for ns, key, scope in (
        (["n"], "g", {}),
        (["n"], "a", {"app_id": "app-a"}),
        (["n", "s"], "s", {"app_id": "app-a", "session_id": "s1"}),
        (["m"], "b", {"app_id": "app-b"}),
    ):
        assert put(api, user_id, ns, key, {"v": key}, **scope)["code"] == 0

    def keys(**body) -> list[str]:
        return sorted(i["key"] for i in search(api, user_id, **body))

    def names(**body) -> list[list[str]]:
        answer = api.post(f"{V1}/items/namespaces", json={"user_id": user_id, **body}).json()
        assert answer["code"] == 0, answer
        return answer["data"]["namespaces"]

    assert keys() == ["g"]  # without subtree: the one scope named
    assert keys(subtree=True) == ["a", "b", "g", "s"]
    assert keys(subtree=True, namespace_prefix=["n"]) == ["a", "g", "s"]
    assert keys(subtree=True, app_id="app-a") == ["a", "s"]
    assert keys(subtree=True, app_id="app-a", session_id="s1") == ["s"]
    assert keys(subtree=True, query="v", limit=2, offset=1) != []  # ranked across scopes
    scoped = {i["key"]: (i["app_id"], i["session_id"]) for i in search(api, user_id, subtree=True)}
    assert scoped == {
        "g": (None, None),
        "a": ("app-a", None),
        "s": ("app-a", "s1"),
        "b": ("app-b", None),
    }
    assert names() == [["n"]]
    assert names(subtree=True) == [["m"], ["n"], ["n", "s"]]
    assert names(subtree=True, app_id="app-a", max_depth=1) == [["n"]]
    assert names(subtree=True, prefix=["n", "*"]) == [["n", "s"]]

    # an app switched off beneath the scope is left out; named, it is 40301
    runtime.switches.set(user_id, "app-b", False, tenant="default")
    try:
        assert keys(subtree=True) == ["a", "g", "s"]
        assert names(subtree=True) == [["n"], ["n", "s"]]
        named = {"user_id": user_id, "app_id": "app-b", "subtree": True}
        assert api.post(f"{V1}/items/search", json=named).json()["code"] == 40301
    finally:
        runtime.switches.set(user_id, "app-b", True, tenant="default")
    bad = api.post(f"{V1}/items/search", json={"user_id": user_id, "subtree": "yes"}).json()
    assert bad["code"] == 40001, bad


@pytest.mark.parametrize(
    "body",
    [
        {"namespace": ["a.b"], "key": "k", "value": {}},
        {"namespace": [], "key": "k", "value": {}},
        {"namespace": ["a"] * 9, "key": "k", "value": {}},
        {"namespace": [""], "key": "k", "value": {}},
        {"namespace": ["a\n"], "key": "k", "value": {}},
        {"namespace": ["a"], "key": "", "value": {}},
        {"namespace": ["a"], "key": "k", "value": [1, 2]},
        {"namespace": ["a"], "key": "k", "value": "text"},
        {"namespace": ["a"], "key": "k"},
        {"namespace": ["a"], "key": "k", "value": {}, "index": True},
        {"namespace": ["a"], "key": "k", "value": {"x": "y" * 40_000}},
    ],
)
def test_bad_input_is_40001(api, user_id, body) -> None:
    answer = api.post(f"{V1}/items/put", json={"user_id": user_id, **body}).json()
    assert answer["code"] == 40001, answer
