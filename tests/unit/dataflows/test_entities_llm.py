"""Entities from an LLM extractor (docs/architecture.md#entities): the prompt asks for
them typed, the answer's entities are kept when the fact says them, and the writer
resolves them instead of the rules."""

from __future__ import annotations

from datetime import UTC, date, datetime

from core.user_index import UserIndex
from dataflows.ingest.entities import linked
from memstream.schemas.enums import Level, MemType, Ownership
from memstream.schemas.events import Message, Strategy
from memstream.schemas.facts import FactEntity
from memstream.schemas.memory import MemoryRecord
from models.prompts import extract_facts

NOW = datetime(2024, 1, 1, tzinfo=UTC)
TURN = [Message(role="user", content="My sister Anna moved to Lyon; I love Ratatouille.")]


def _rec(text: str) -> MemoryRecord:
    return MemoryRecord(
        memory_id="m1", user_id=7, content=text, content_hash="", level=Level.GLOBAL,
        ownership=Ownership.USER, mem_type=MemType.SEMANTIC, weight=0.5, weight_at=NOW,
        created_at=NOW, updated_at=NOW, valid_at=NOW,
    )  # fmt: skip


def test_the_prompt_asks_for_typed_entities_of_the_declared_types() -> None:
    plain = extract_facts.build_context(TURN, Ownership.USER, None, date(2024, 1, 1))
    assert '"entities"' in extract_facts.system_prompt(plain)
    assert "person, place" in extract_facts.system_prompt(plain)
    dishes = extract_facts.build_context(
        TURN, Ownership.USER, Strategy(entity_types=["dish"]), date(2024, 1, 1)
    )
    assert "(dish)" in extract_facts.system_prompt(dishes)


def test_the_answers_entities_are_kept_when_the_fact_says_them() -> None:
    ctx = extract_facts.build_context(TURN, Ownership.USER, None, date(2024, 1, 1))
    answer = {"facts": [{"text": "User's sister Anna moved to Lyon", "source": 0, "entities": [
        {"name": "Anna", "type": "person", "relation": "sister"},
        {"name": "Lyon", "type": "place"},
        {"name": "Paris", "type": "place"},  # not said: dropped
        {"type": "place"},  # malformed: dropped, the fact kept
    ]}, {"text": "Loves Ratatouille", "source": 0}]}  # fmt: skip
    first, second = extract_facts.to_facts(answer, ctx, TURN)
    assert first.entities == (
        FactEntity(name="Anna", type="person", relation="sister"),
        FactEntity(name="Lyon", type="place"),
    )
    assert second.entities is None  # none given: the rules will look


def test_the_writer_resolves_the_llms_entities_and_keeps_a_declared_type() -> None:
    idx = UserIndex(7, 4)
    given = (FactEntity(name="Ratatouille", type="Dish"), FactEntity(name="Lyon", type="place"))
    rec, warnings = linked(_rec("Loves Ratatouille in Lyon"), idx, ["dish"], given=given)
    assert [(x["name"], x["type"]) for x in rec.entities] == [("Ratatouille", "dish")]
    assert warnings == ()
    # no declared types: a type the rules do not know is "other"
    rec, _ = linked(_rec("Loves Ratatouille in Lyon"), UserIndex(7, 4), None, given=given)
    assert [(x["name"], x["type"]) for x in rec.entities] == [
        ("Ratatouille", "other"), ("Lyon", "place"),
    ]  # fmt: skip
    # the rules, for the same declared type, warn
    rec, warnings = linked(_rec("Loves Ratatouille in Lyon"), UserIndex(7, 4), ["dish"])
    assert rec.entities == [] and warnings
