"""``entity/update`` through HTTP against the real stack (docs/api.md#entityupdate): a
caller renames an entity, merges two, or splits memories off one; each changed memory
gets a new version and one change row, ``memory_entities`` follows (a dropped link
UNLINKED, the new one ACTIVE), the registry resolves the next mention as corrected,
and nothing of another user, tenant or app moves. Bad bodies answer 40001, an unknown
entity 40401, a key that may not change the memories 40101."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)


@pytest.fixture
def call(http, keys):
    def send(who: str, path: str, body: dict) -> dict:
        headers = {"Authorization": f"Bearer {keys[1][who]}"}
        return http.post(f"/memory/v1/{path}", json=body, headers=headers).json()

    return send


def _add(call, user_id: int, content: str, who: str = "admin", **extra) -> str:
    body = call(who, "add_structured", {"user_id": user_id, "content": content, **extra})
    assert body["code"] == 0, body
    return body["data"]["memory_id"]


def _links_of(runtime, user_id: int, mid: str, tenant: str = "default") -> dict[str, dict]:
    """name -> link of the memory's current version."""
    rec = runtime.memories.get(user_id, mid, tenant=tenant)
    return {x["name"]: x for x in rec.entities}


def _table(runtime, user_id: int) -> dict[tuple[str, str], str]:
    """(memory_id, entity_id) -> status, as ``memory_entities`` holds it now."""
    db = runtime.stores.clickhouse.database
    rows = runtime.stores.clickhouse.query(
        f"SELECT memory_id, entity_id, status FROM {db}.memory_entities FINAL "
        "WHERE user_id = {u:UInt64}",
        {"u": user_id},
    )
    return {(m, e): s for m, e, s in rows}


def _changes(runtime, user_id: int, mid: str) -> list:
    rows, _ = runtime.changelog.query(user_id, tenant="default", memory_ids=[mid], limit=100)
    return rows


def _update(call, user_id: int, who: str = "admin", **body) -> dict:
    return call(who, "entity/update", {"user_id": user_id, **body})


def test_rename_rewrites_every_link_and_the_next_mention_follows(call, runtime, user_id) -> None:
    m1 = _add(call, user_id, "My sister Anna lives in Lyon.", app_id="appA")
    m2 = _add(call, user_id, "I had lunch with Anna in Paris.", app_id="appA")
    anna = _links_of(runtime, user_id, m1)["Anna"]["entity_id"]
    assert _links_of(runtime, user_id, m2)["Anna"]["entity_id"] == anna
    # the same words for another user and in another tenant: other entities
    other = _add(call, user_id + 1, "My sister Anna lives in Lyon.", app_id="appA")
    theirs = _add(call, user_id, "My sister Anna lives in Lyon.", who="T2", app_id="appA")

    got = _update(call, user_id, op="rename", entity_id=anna, name="Anna Smith")
    assert got["code"] == 0, got
    data = got["data"]
    assert data["entity_id"] == anna and data["name"] == "Anna Smith"
    assert data["memories_changed"] == 2 and sorted(data["memory_ids"]) == sorted([m1, m2])
    link = _links_of(runtime, user_id, m1)["Anna Smith"]
    assert link["entity_id"] == anna and link["said"] == "Anna" and link["relation"] == "sister"
    assert "Lyon" in _links_of(runtime, user_id, m1)  # the other links stay
    table = _table(runtime, user_id)
    assert table[(m1, anna)] == "ACTIVE" and table[(m2, anna)] == "ACTIVE"
    rows = [c for c in _changes(runtime, user_id, m1) if c.op_type == "UPDATE"]
    assert len(rows) == 1 and rows[0].op_source == "USER" and anna in rows[0].reason
    assert rows[0].content_before == rows[0].content_after == "My sister Anna lives in Lyon."

    # the old name stays an alias, the new one is a name: both find the entity
    m3 = _add(call, user_id, "I called Anna Smith today.", app_id="appA")
    assert _links_of(runtime, user_id, m3)["Anna Smith"]["entity_id"] == anna
    m4 = _add(call, user_id, "Anna sent me a postcard from Rome.", app_id="appA")
    assert _links_of(runtime, user_id, m4)["Anna Smith"]["entity_id"] == anna

    # nothing of another user or tenant moved
    assert "Anna" in _links_of(runtime, user_id + 1, other)
    assert "Anna" in _links_of(runtime, user_id, theirs, tenant="t2")


def test_rename_retypes_and_is_idempotent_by_request_id(call, runtime, user_id) -> None:
    m1 = _add(call, user_id, "I bought a Fender at the fair.", app_id="appA")
    links = _links_of(runtime, user_id, m1)
    if "Fender" not in links:
        pytest.skip("the rules did not read Fender as an entity")
    fender = links["Fender"]["entity_id"]
    body = {"op": "rename", "entity_id": fender, "type": "instrument", "request_id": "rt-1"}
    first = _update(call, user_id, **body)
    assert first["code"] == 0, first
    again = _update(call, user_id, **body)
    assert again["data"] == first["data"]
    assert _links_of(runtime, user_id, m1)["Fender"]["type"] == "instrument"
    rows = [c for c in _changes(runtime, user_id, m1) if c.op_type == "UPDATE"]
    assert len(rows) == 1
    reused = _update(call, user_id, **{**body, "type": "brand"})
    assert reused["code"] == 40901, reused


def test_merge_moves_the_links_once_and_the_table_follows(call, runtime, user_id) -> None:
    m1 = _add(call, user_id, "I saw Robert at the market.", app_id="appA")
    m2 = _add(call, user_id, "My neighbour Bob fixed my bike.", app_id="appA")
    m3 = _add(call, user_id, "I went hiking with Robert and Bob.", app_id="appA")
    robert = _links_of(runtime, user_id, m1)["Robert"]["entity_id"]
    bob = _links_of(runtime, user_id, m2)["Bob"]["entity_id"]
    assert robert != bob

    got = _update(call, user_id, op="merge", entity_id=bob, into=robert)
    assert got["code"] == 0, got
    assert got["data"]["entity_id"] == robert
    assert sorted(got["data"]["memory_ids"]) == sorted([m2, m3])
    two = _links_of(runtime, user_id, m2)["Robert"]
    assert two["entity_id"] == robert and two["said"] == "Bob" and two["relation"] == "neighbor"
    both = runtime.memories.get(user_id, m3, tenant="default").entities
    assert [x["entity_id"] for x in both] == [robert]  # no duplicate link
    table = _table(runtime, user_id)
    assert table[(m2, bob)] == "UNLINKED" and table[(m2, robert)] == "ACTIVE"
    assert table[(m3, bob)] == "UNLINKED" and table[(m3, robert)] == "ACTIVE"
    assert table[(m1, robert)] == "ACTIVE" and not _changes_of(runtime, user_id, m1)
    rows = _changes_of(runtime, user_id, m2)
    assert len(rows) == 1 and bob in rows[0].reason and robert in rows[0].reason

    # the merged name resolves to the survivor; the merged entity is gone
    m4 = _add(call, user_id, "Yesterday I met Bob again.", app_id="appA")
    assert {
        x["entity_id"] for x in runtime.memories.get(user_id, m4, tenant="default").entities
    } == {robert}
    gone = _update(call, user_id, op="merge", entity_id=bob, into=robert)
    assert gone["code"] == 40401, gone


def _changes_of(runtime, user_id: int, mid: str) -> list:
    return [c for c in _changes(runtime, user_id, mid) if c.op_type == "UPDATE"]


def test_split_moves_the_named_memories_to_a_new_entity(call, runtime, user_id) -> None:
    m1 = _add(call, user_id, "My sister Anna lives in Lyon.", app_id="appA")
    m2 = _add(call, user_id, "I had lunch with Anna in Paris.", app_id="appA")
    anna = _links_of(runtime, user_id, m1)["Anna"]["entity_id"]

    got = _update(call, user_id, op="split", entity_id=anna, memory_ids=[m2], name="Anna Rossi")
    assert got["code"] == 0, got
    new = got["data"]["entity_id"]
    assert new != anna and new.startswith("e_") and got["data"]["memory_ids"] == [m2]
    moved = _links_of(runtime, user_id, m2)["Anna Rossi"]
    assert moved["entity_id"] == new and moved["said"] == "Anna" and moved["type"] == "person"
    assert _links_of(runtime, user_id, m1)["Anna"]["entity_id"] == anna  # untouched
    table = _table(runtime, user_id)
    assert table[(m2, anna)] == "UNLINKED" and table[(m2, new)] == "ACTIVE"
    assert table[(m1, anna)] == "ACTIVE"
    assert len(_changes_of(runtime, user_id, m2)) == 1 and not _changes_of(runtime, user_id, m1)

    # a memory that does not name the entity (any more) cannot leave it
    again = _update(call, user_id, op="split", entity_id=anna, memory_ids=[m2])
    assert again["code"] == 40401, again
    # the split-off entity answers its new name
    m3 = _add(call, user_id, "Anna Rossi moved to Turin.", app_id="appA")
    assert _links_of(runtime, user_id, m3)["Anna Rossi"]["entity_id"] == new


def test_keys_change_only_what_they_may(call, runtime, user_id) -> None:
    mine = _add(call, user_id, "I visited Berlin with Clara.", who="A", app_id="appA")
    glob = _add(call, user_id, "My brother Marco lives in Milan.")  # GLOBAL, by admin
    clara = _links_of(runtime, user_id, mine)["Clara"]["entity_id"]
    marco = _links_of(runtime, user_id, glob)["Marco"]["entity_id"]

    # another app's key: the entity does not exist for it
    unseen = _update(call, user_id, who="B", op="rename", entity_id=clara, name="Klara")
    assert unseen["code"] == 40401, unseen
    split = _update(call, user_id, who="B", op="split", entity_id=clara, memory_ids=[mine])
    assert split["code"] == 40401, split
    # a GLOBAL entity an app key may read but not change (no global grant)
    ro = _update(call, user_id, who="A", op="rename", entity_id=marco, name="Marcus")
    assert ro["code"] == 40101, ro
    ro_split = _update(call, user_id, who="A", op="split", entity_id=marco, memory_ids=[glob])
    assert ro_split["code"] == 40101, ro_split
    # a GLOBAL entity never folds into an app's
    cross = _update(call, user_id, op="merge", entity_id=marco, into=clara)
    assert cross["code"] == 40001, cross
    assert _links_of(runtime, user_id, glob)["Marco"]["entity_id"] == marco

    # a GLOBAL entity only its app's memories name now: still every app's, not its own
    first = _add(call, user_id, "My friend Petra works at the bakery.")  # GLOBAL
    petra = _links_of(runtime, user_id, first)["Petra"]["entity_id"]
    reused = _add(call, user_id, "I met Petra at the gym.", who="A", app_id="appA")
    assert _links_of(runtime, user_id, reused)["Petra"]["entity_id"] == petra
    assert call("admin", "delete", {"user_id": user_id, "memory_id": first})["code"] == 0
    glob_rename = _update(call, user_id, who="A", op="rename", entity_id=petra, name="P.")
    assert glob_rename["code"] == 40101, glob_rename
    assert "Petra" in _links_of(runtime, user_id, reused)

    # its own app's entity: fine
    ok = _update(call, user_id, who="A", op="rename", entity_id=clara, name="Clara Weiss")
    assert ok["code"] == 0, ok
    assert _links_of(runtime, user_id, mine)["Clara Weiss"]["entity_id"] == clara


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"op": "rename", "entity_id": "e_x"}, 40001),  # rename without a name or type
        ({"op": "rename", "entity_id": "e_x", "name": "   "}, 40001),
        ({"op": "merge", "entity_id": "e_x"}, 40001),  # merge without into
        ({"op": "merge", "entity_id": "e_x", "into": "e_x"}, 40001),  # into itself
        ({"op": "split", "entity_id": "e_x"}, 40001),  # split without memory_ids
        ({"op": "split", "entity_id": "e_x", "memory_ids": []}, 40001),
        ({"op": "split", "entity_id": "e_x", "memory_ids": ["m_1"], "into": "e_y"}, 40001),
        ({"op": "explode", "entity_id": "e_x"}, 40001),
        ({"op": "rename", "name": "X"}, 40001),  # no entity_id
        ({"op": "rename", "entity_id": "e_x", "name": "X", "extra": 1}, 40001),
        ({"op": "rename", "entity_id": "e_unknown", "name": "X"}, 40401),
        ({"op": "merge", "entity_id": "e_unknown", "into": "e_other"}, 40401),
        ({"op": "split", "entity_id": "e_unknown", "memory_ids": ["m_nope"]}, 40401),
    ],
)
def test_bad_bodies_and_unknown_entities(call, user_id, body, code) -> None:
    got = _update(call, user_id, **body)
    assert got["code"] == code, got


def test_merge_into_an_unknown_entity_is_not_found(call, runtime, user_id) -> None:
    m1 = _add(call, user_id, "I saw Robert at the market.", app_id="appA")
    robert = _links_of(runtime, user_id, m1)["Robert"]["entity_id"]
    got = _update(call, user_id, op="merge", entity_id=robert, into="e_nobody")
    assert got["code"] == 40401, got
    assert _links_of(runtime, user_id, m1)["Robert"]["entity_id"] == robert


def test_corrections_hold_after_a_restart(call, runtime, user_id) -> None:
    """The registry is rebuilt from the stored links when the index is loaded again: a
    rewritten link keeps the words the memory said, so a renamed entity still answers
    its old name and a merged one's names still reach the survivor."""
    m1 = _add(call, user_id, "I had lunch with Anna in Paris.", app_id="appA")
    m2 = _add(call, user_id, "I saw Robert at the market.", app_id="appA")
    m3 = _add(call, user_id, "My neighbour Bob fixed my bike.", app_id="appA")
    anna = _links_of(runtime, user_id, m1)["Anna"]["entity_id"]
    robert = _links_of(runtime, user_id, m2)["Robert"]["entity_id"]
    bob = _links_of(runtime, user_id, m3)["Bob"]["entity_id"]
    assert _update(call, user_id, op="rename", entity_id=anna, name="Anna Smith")["code"] == 0
    assert _update(call, user_id, op="merge", entity_id=bob, into=robert)["code"] == 0

    runtime.cache.clear()  # the restart: the registry is gone with the index

    later = _add(call, user_id, "I went to Rome with Anna and Bob.", app_id="appA")
    links = {
        x["entity_id"]: x["name"]
        for x in runtime.memories.get(user_id, later, tenant="default").entities
    }
    assert links.get(anna) == "Anna Smith" and links.get(robert) == "Robert", links
    assert bob not in links
