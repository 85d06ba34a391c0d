"""The entity view's rules (pure): which memories count, name, aliases, counts, order,
name matching and the timeline."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from core.entity_keys import entity_key
from core.entity_view import aggregate, in_scope, matching, of_type, on_timeline, timeline
from core.hashing import content_hash
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.memory import EntityLink, MemoryRecord

T0 = datetime(2025, 1, 1, tzinfo=UTC)
_n = itertools.count()


def link(eid: str, name: str, type_: str = "person", said: str = "") -> EntityLink:
    return EntityLink(entity_id=eid, name=name, type=type_, said=said)


def mem(text: str, *links: EntityLink, day: int = 0, **kw) -> MemoryRecord:
    at = T0 + timedelta(days=day)
    base = {
        "memory_id": f"m_{next(_n):04d}",
        "user_id": 7,
        "content": text,
        "content_hash": content_hash(text),
        "level": Level.GLOBAL,
        "ownership": Ownership.USER,
        "mem_type": MemType.SEMANTIC,
        "weight": 0.5,
        "weight_at": at,
        "created_at": at,
        "updated_at": at,
        "valid_at": at,
        "entities": list(links),
    }
    base.update(kw)
    return MemoryRecord(**base)


def test_no_links_no_entities() -> None:
    assert aggregate([mem("I like tea."), mem("Rainy today.")]) == []


def test_counts_active_memories_and_names_from_the_newest_link() -> None:
    anna = link("e_anna", "Anna", said="my sister")
    recs = [
        mem("My sister Anna lives in Lyon.", anna, link("e_lyon", "Lyon", "place"), day=1),
        mem("Anna likes chess.", link("e_anna", "Anna"), day=3),
        mem("Annie got a dog.", link("e_anna", "Annie", said="Annie"), day=5),
    ]
    views = aggregate(recs)
    assert [v.entity_id for v in views] == ["e_anna", "e_lyon"]
    a = views[0]
    assert (a.name, a.type, a.memories) == ("Annie", "person", 3)
    assert a.aliases == ("Anna", "my sister")  # newest first, each once, not the name
    assert a.last_seen == T0 + timedelta(days=5)
    assert views[1].memories == 1 and views[1].type == "place"


def test_history_is_traceable_but_deleted_names_nothing() -> None:
    sz = link("e_sz", "Shenzhen", "place")
    old = mem("I live in Shenzhen.", sz, day=1, status=Status.SUPERSEDED, superseded_by="m_x")
    gone = mem("I told Bob a secret.", link("e_bob", "Bob"), day=2, status=Status.DELETED)
    archived = mem("Lyon in spring.", link("e_lyon", "Lyon", "place"), day=3)
    archived.status = Status.ARCHIVED
    views = {v.entity_id: v for v in aggregate([old, gone, archived])}
    assert set(views) == {"e_sz", "e_lyon"}  # never the deleted memory's entity
    assert views["e_sz"].memories == 0  # only history names it
    assert views["e_sz"].last_seen == T0 + timedelta(days=1)
    assert views["e_lyon"].memories == 0
    assert not on_timeline(gone) and on_timeline(old) and on_timeline(archived)


def test_last_seen_is_from_active_memories_when_there_are_some() -> None:
    recs = [
        mem("Max barks.", link("e_max", "Max", "pet"), day=2),
        mem("Max was sick.", link("e_max", "Max", "pet"), day=9, status=Status.SUPERSEDED),
    ]
    (v,) = aggregate(recs)
    assert v.memories == 1 and v.last_seen == T0 + timedelta(days=2)


def test_order_most_memories_then_most_recent_then_name() -> None:
    recs = [
        mem("a", link("e_b", "Bea"), day=1),
        mem("b", link("e_c", "Cy"), day=4),
        mem("c", link("e_a", "Al"), day=4),
        mem("d", link("e_z", "Zed"), day=0),
        mem("e", link("e_z", "Zed"), day=0),
    ]
    assert [v.name for v in aggregate(recs)] == ["Zed", "Al", "Cy", "Bea"]


def test_a_memory_linking_an_entity_twice_counts_once() -> None:
    (v,) = aggregate([mem("Anna and anna.", link("e_a", "Anna"), link("e_a", "anna"))])
    assert v.memories == 1 and v.aliases == ()  # "anna" folds to the name


def test_scope_global_and_one_app() -> None:
    g = mem("g", level=Level.GLOBAL)
    a = mem("a", level=Level.APP, app_id="appA")
    s = mem("s", level=Level.SESSION, app_id="appA", session_id="s1")
    b = mem("b", level=Level.APP, app_id="appB")
    both = [r.content for r in (g, a, s, b) if in_scope(r, include_global=True, app_id="appA")]
    assert both == ["g", "a", "s"]
    assert [
        r.content for r in (g, a, s, b) if in_scope(r, include_global=False, app_id="appA")
    ] == ["a", "s"]
    assert [r.content for r in (g, a, b) if in_scope(r, include_global=True, app_id=None)] == ["g"]


def test_type_filter_folds_case() -> None:
    views = aggregate([mem("x", link("e_1", "Lyon", "place"), link("e_2", "Anna"))])
    assert [v.entity_id for v in of_type(views, "PLACE")] == ["e_1"]
    assert of_type(views, "pet") == []


def test_matching_by_id_by_name_alias_and_folding() -> None:
    recs = [
        mem("My sister Anna.", link("e_1", "Anna", said="my sister"), day=1),
        mem("Anna from work.", link("e_2", "Anna"), link("e_2", "Anna"), day=2),
        mem("Anna's cat.", link("e_2", "Anna"), day=3),
    ]
    views = aggregate(recs)
    assert [v.entity_id for v in matching(views, entity_id="e_1")] == ["e_1"]
    assert matching(views, entity_id="e_nope") == []
    # two people called Anna: both, the one with more memories first
    assert [v.entity_id for v in matching(views, name="anna")] == ["e_2", "e_1"]
    assert [v.entity_id for v in matching(views, name="ANNA'S", fold=entity_key)] == ["e_2", "e_1"]
    assert [v.entity_id for v in matching(views, name="My Sister")] == ["e_1"]  # an alias
    assert matching(views, name="Bob") == []
    assert matching(views, name="  '' ", fold=entity_key) == []  # folds to nothing


def test_timeline_in_valid_at_order_with_history() -> None:
    sz, gz = link("e_me", "Lin"), link("e_me", "Lin")
    moved = mem("Lin moved to Guangzhou.", gz, day=30)
    lived = mem(
        "Lin lives in Shenzhen.",
        sz,
        day=1,
        status=Status.SUPERSEDED,
        invalid_at=T0 + timedelta(days=30),
        superseded_by=moved.memory_id,
    )
    deleted = mem("Lin's password hint.", sz, day=5, status=Status.DELETED)
    other = mem("Tea.", day=2)
    assert [r.content for r in timeline([moved, deleted, other, lived], "e_me")] == [
        "Lin lives in Shenzhen.",
        "Lin moved to Guangzhou.",
    ]
    assert timeline([moved], "e_other") == []
