"""Entity resolution per user (core.entity_resolution, docs/architecture.md#entities)."""

from __future__ import annotations

from datetime import UTC, datetime

from core.entity_resolution import EntityRegistry
from memstream.schemas.enums import Level, MemType, Ownership
from memstream.schemas.memory import MemoryRecord
from models.rules.entities import extract_entities

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def _links(reg: EntityRegistry, text: str, scope: str = "") -> dict[str, str]:
    """What ``text`` names, by the form said → entity id (the ingest's way: the user's
    known names help the extractor)."""
    found = extract_entities(text, known=reg.known_keys()).mentions
    return {x["said"] or x["name"]: x["entity_id"] for x in reg.resolve(found, scope)}


def _rec(mid: str, links, app: str | None = None) -> MemoryRecord:
    return MemoryRecord(
        memory_id=mid, user_id=7, content="", content_hash="", level=Level.APP if app else Level.GLOBAL,
        ownership=Ownership.USER, mem_type=MemType.SEMANTIC, weight=0.5, weight_at=NOW,
        created_at=NOW, updated_at=NOW, valid_at=NOW, app_id=app, entities=links,
    )  # fmt: skip


def test_case_possessive_relation_and_first_name_join_one_entity() -> None:
    reg = EntityRegistry("default", 7)
    anna = _links(reg, "My sister Anna lives in Lyon.")["Anna"]
    assert _links(reg, "My sister loves hiking.")["sister"] == anna
    assert _links(reg, "Anna's dog is Rex.")["Anna"] == anna
    assert _links(reg, "Anna is 30.")["Anna"] == anna  # known: a name at a sentence start
    mel = _links(reg, "I met Melanie in Rome.")["Melanie"]
    assert _links(reg, "I saw Mel today.")["Mel"] == mel
    assert len({anna, mel}) == 2


def test_a_relation_named_later_takes_the_name() -> None:
    reg = EntityRegistry("default", 7)
    mom = _links(reg, "My mom loves roses.")["mom"]
    links = reg.resolve(extract_entities("My mom Linda is a nurse.").mentions, "")
    assert links[0]["entity_id"] == mom and links[0]["name"] == "Linda"


def test_two_candidates_for_an_alias_join_neither() -> None:
    reg = EntityRegistry("default", 7)
    a = _links(reg, "I met Melanie in Rome.")["Melanie"]
    b = _links(reg, "I met Melvin in Oslo.")["Melvin"]
    mel = _links(reg, "I saw Mel today.")["Mel"]
    assert mel not in (a, b)


def test_ids_are_per_user_tenant_and_scope_and_stable_under_a_rebuild() -> None:
    text = "My sister Anna lives in Lyon."
    one = _links(EntityRegistry("default", 7), text)["Anna"]
    assert _links(EntityRegistry("default", 7), text)["Anna"] == one  # a replay
    assert _links(EntityRegistry("default", 8), text)["Anna"] != one
    assert _links(EntityRegistry("t2", 7), text)["Anna"] != one
    assert _links(EntityRegistry("default", 7), text, "app_a")["Anna"] != one
    # an app memory reuses a GLOBAL entity; a GLOBAL memory never an app's
    reg = EntityRegistry("default", 7)
    g = _links(reg, text)["Anna"]
    assert _links(reg, "Anna is 30.", "app_a")["Anna"] == g
    reg2 = EntityRegistry("default", 7)
    a = _links(reg2, text, "app_a")["Anna"]
    assert _links(reg2, "Anna is 30.")["Anna"] != a
    assert _links(reg2, "Anna is 30.", "app_b")["Anna"] != a


def test_the_registry_rebuilt_from_stored_links_resolves_the_same() -> None:
    reg = EntityRegistry("default", 7)
    first = reg.resolve(extract_entities("My sister Anna lives in Lyon.").mentions, "")
    again = EntityRegistry("default", 7)
    again.learn([_rec("m1", first)])
    assert _links(again, "My sister is here.")["sister"] == first[0]["entity_id"]
    assert _links(again, "Lyon is far.")["Lyon"] == first[1]["entity_id"]


def test_two_named_people_of_one_relation_stay_two() -> None:
    reg = EntityRegistry("default", 7)
    anna = _links(reg, "My friend Anna lives in Lyon.")["Anna"]
    marco = _links(reg, "My friend Marco lives in Milan.")["Marco"]
    lena = _links(reg, "My sister Lena is 30.")["Lena"]
    mia = _links(reg, "My sister Mia is 25.")["Mia"]
    assert len({anna, marco, lena, mia}) == 4
