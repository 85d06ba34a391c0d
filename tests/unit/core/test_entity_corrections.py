"""A caller's corrections of resolution in the registry (core.entity_resolution's rename,
merge and split; docs/api.md#entityupdate): the next mention resolves as corrected."""

from __future__ import annotations

from core.entity_resolution import EntityRegistry
from models.rules.entities import extract_entities


def _links(reg: EntityRegistry, text: str, scope: str = "") -> dict[str, str]:
    found = extract_entities(text, known=reg.known_keys()).mentions
    return {x["name"]: x["entity_id"] for x in reg.resolve(found, scope)}


def test_a_rename_keeps_the_old_name_as_an_alias() -> None:
    reg = EntityRegistry("default", 7)
    anna = _links(reg, "I had lunch with Anna in Paris.")["Anna"]
    known = reg.rename(anna, "Anna Smith", "friend")
    assert (known.name, known.type) == ("Anna Smith", "friend")
    assert _links(reg, "I called Anna yesterday.") == {"Anna Smith": anna}
    assert _links(reg, "I called Anna Smith yesterday.") == {"Anna Smith": anna}


def test_a_merge_sends_every_name_to_the_survivor() -> None:
    reg = EntityRegistry("default", 7)
    robert = _links(reg, "I saw Robert at the market.")["Robert"]
    bob = _links(reg, "My neighbour Bob fixed my bike.")["Bob"]
    assert reg.merge(bob, robert).entity_id == robert
    assert reg.get(bob) is None
    assert set(_links(reg, "I went hiking with Bob.").values()) == {robert}


def test_an_app_entity_merges_into_a_global_one() -> None:
    reg = EntityRegistry("default", 7)
    glob = _links(reg, "I saw Robert at the market.")["Robert"]
    app = _links(reg, "Rob came to the shop.", scope="shop")
    rob = app.get("Rob")
    if rob is None or rob == glob:
        return  # the rules joined them already (first-name alias): nothing to correct
    reg.merge(rob, glob)
    assert set(_links(reg, "Rob called again.", scope="shop").values()) == {glob}


def test_a_split_leaves_the_old_entity_its_names() -> None:
    reg = EntityRegistry("default", 7)
    anna = _links(reg, "I had lunch with Anna in Paris.")["Anna"]
    other = reg.split(anna, "e_split", "Anna Rossi")
    assert (other.entity_id, other.name, other.type, other.scope) == (
        "e_split",
        "Anna Rossi",
        "person",
        "",
    )
    assert _links(reg, "I called Anna yesterday.") == {"Anna": anna}
    assert _links(reg, "Anna Rossi moved to Turin.")["Anna Rossi"] == "e_split"
