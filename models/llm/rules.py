"""Provider ``rules`` (the default when no LLM is set): no model, deterministic.

Extraction is :mod:`models.rules.extract`. Evolution is by similarity threshold
(docs/architecture.md#dedup-and-evolution): the same normalized text, or a cosine score ≥
``near_duplicate_similarity`` (0.95 by default, never the recall threshold) *with the same
names, numbers and dates* (:func:`core.sameness.same_specifics`: two towns are two facts
however close their cosine), is NONE against that memory; anything else is ADD. The rules
never UPDATE, and DELETE (supersede) only what a new fact names as ended
(:mod:`models.rules.change`: "Sold a Subaru Outback, we got a Tesla" supersedes "Aisha
drives a Subaru Outback"): anything subtler needs understanding, and a wrong supersession
would hide a true memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from core.sameness import same_specifics
from memstream.schemas.enums import OpType, Ownership
from memstream.schemas.events import Message, Strategy
from memstream.schemas.facts import Decision, Fact, SimilarLike, as_similar
from models.lang import normalize
from models.llm.base import LLM
from models.rules.change import superseded_by
from models.rules.extract import extract_rules


class RulesLLM(LLM):
    """Same interface as the LLM providers; thread-safe (no shared mutable state)."""

    uses_context = False

    def __init__(self, near_duplicate_similarity: float = 0.95) -> None:
        self.near_duplicate_similarity = near_duplicate_similarity

    @property
    def name(self) -> str:
        return "rules"

    def extract_facts(
        self,
        messages: Sequence[Message],
        ownership: Ownership | None,
        strategy: Strategy | None,
        today: date,
    ) -> list[Fact]:
        return extract_rules(messages, ownership, today)  # focus/entity_types need an LLM

    def decide(self, new_fact: str | Fact, similar: Sequence[SimilarLike]) -> list[Decision]:
        text = new_fact.text if isinstance(new_fact, Fact) else new_fact
        key = normalize(text)
        best_id, best_score = None, -1.0
        items = as_similar(similar)
        for item in items:
            if normalize(item.text) == key:
                return [Decision(op=OpType.NONE, target_id=item.id)]
            score = item.score
            if (
                score is not None
                and score >= self.near_duplicate_similarity
                and score > best_score
                and same_specifics(text, item.text)
            ):
                best_id, best_score = item.id, score
        if best_id is not None:
            return [Decision(op=OpType.NONE, target_id=best_id)]
        ended = [
            Decision(op=OpType.DELETE, target_id=item.id)
            for item in items
            if not item.merged and superseded_by(text, item.text)
        ]
        return [Decision(op=OpType.ADD, text=text), *ended]
