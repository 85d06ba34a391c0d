"""Consolidation summary prompt
(docs/architecture.md#consolidation-and-paged-out-memories).

Several memories of one person, in time order, become ONE memory. Consolidation only
asks about memories that say the same thing, or the same thing with other values
(:mod:`core.compression` chose them), so the summary is a *compression*: shorter than
the memories together, about one thing, at most ``max_chars``. It is what recall will
search instead of the members, so it must keep every name, number, date and place they
hold (those are what questions ask for) and drop only repetition. An answer over the
bound is refused (asked again once, then the rules' text is used), never clipped: a
clipped summary would lose values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from memstream.schemas.facts import ChatMessage
from memstream.schemas.json_types import JsonObject
from models.errors import MalformedOutput
from models.lang import dominant_language

VERSION = "consolidate/v2"


class SummaryResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1)


@dataclass(frozen=True)
class ConsolidateContext:
    memories: tuple[str, ...]  # in time order
    max_chars: int
    language: str  # "en" | "zh": a hint, the memories' own language wins


def build_context(texts: Sequence[str], max_chars: int) -> ConsolidateContext:
    memories = tuple(t.strip() for t in texts if t.strip())
    return ConsolidateContext(memories, max_chars, dominant_language(list(memories)))


_SYSTEM = """You compress the memories a memory system keeps about one person. You get several memories in time order that say the same thing, or the same thing with other values (other towns, dates, names, numbers); write ONE memory, shorter than them together, that says everything they say.

Rules:
- Keep every name, number, date, time, place, product and preference. Questions will ask for exactly those, and the originals will no longer be searched.
- Keep who is who: if a memory names a person ("Priya", "Tomás"), the summary names them too. Never turn a named person into "the user".
- Say the shared part once and list the values that differ. Drop only repetition. Do not add anything that is not in the memories, no advice, no comments.
- When a later memory changes an earlier one, say what is current and what it was before ("Lives in Lisbon since 2024-05; lived in Berlin before").
- Write in the language of the memories. At most {max_chars} characters.
- Answer with one JSON object only: {{"summary": str}}.

Examples:
Memories: ["Visited Zorvath001 and loved its bakery", "Visited Zorvath002 and loved its bakery", "Visited Zorvath003 and loved its bakery"]
Output: {{"summary": "Visited Zorvath001, Zorvath002 and Zorvath003 and loved their bakeries"}}

Memories: ["Priya is allergic to peanuts", "Priya has a peanut allergy"]
Output: {{"summary": "Priya is allergic to peanuts"}}

Memories: ["用户去过深圳出差", "用户去过广州出差"]
Output: {{"summary": "用户去过深圳和广州出差"}}"""


def to_messages(ctx: ConsolidateContext) -> list[ChatMessage]:
    """The chat messages for one summary call (pure)."""
    listed = json.dumps(list(ctx.memories), ensure_ascii=False)
    hint = "Chinese" if ctx.language == "zh" else "English"
    user = (
        f"Memories: {listed}\n\nWrite the one consolidated memory (in {hint}, at most "
        f"{ctx.max_chars} characters). Return the JSON object."
    )
    system = _SYSTEM.format(max_chars=ctx.max_chars)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def to_summary(obj: JsonObject, ctx: ConsolidateContext) -> str:
    """The validated summary; one over the bound is refused, not clipped."""
    text = SummaryResponse.model_validate(obj).summary.strip()
    if not text:
        raise MalformedOutput("the summary is empty")
    if len(text) > ctx.max_chars:
        raise MalformedOutput(f"the summary has {len(text)} chars, the bound is {ctx.max_chars}")
    return text
