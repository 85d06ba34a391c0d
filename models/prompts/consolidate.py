"""Consolidation summary prompt (design document chapter 9; DESIGN §7 "consolidate").

Several memories of one person, in time order, become ONE memory. The summary is what
recall will search instead of the members, so it must keep every name, number, date
and place they hold (those are what questions ask for) and drop only repetition. The
answer is clipped to ``max_chars``: a merged memory stays one readable memory.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.consolidation import bounded_join
from models.errors import MalformedOutput
from models.lang import dominant_language
from models.types import ChatMessage

VERSION = "consolidate/v1"


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


_SYSTEM = """You consolidate the memories a memory system keeps about one person. You get several related memories in time order; write ONE memory that says everything they say.

Rules:
- Keep every name, number, date, time, place, product and preference. Questions will ask for exactly those, and the originals will no longer be searched.
- Keep who is who: if a memory names a person ("Priya", "Tomás"), the summary names them too. Never turn a named person into "the user".
- Drop only repetition. Do not add anything that is not in the memories, no advice, no comments.
- When memories show a habit, say so and keep the specifics: 20 takeaway orders, mostly from Luigi's -> "Often orders takeaway, mostly pizza from Luigi's (orders on 2024-03-02, 2024-03-09, ...)".
- When a later memory changes an earlier one, say what is current and what it was before ("Lives in Lisbon since 2024-05; lived in Berlin before").
- Write in the language of the memories. At most {max_chars} characters.
- Answer with one JSON object only: {{"summary": str}}.

Examples:
Memories: ["Priya started a pottery class on 2023-05-07", "Priya's pottery class meets on Tuesdays", "Priya made a blue vase in pottery class"]
Output: {{"summary": "Priya started a pottery class on 2023-05-07; it meets on Tuesdays, and she made a blue vase there"}}

Memories: ["用户喜欢喝绿茶", "用户每天早上喝一杯龙井"]
Output: {{"summary": "用户喜欢喝绿茶，每天早上喝一杯龙井"}}"""


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


def to_summary(obj: dict[str, Any], ctx: ConsolidateContext) -> str:
    """The validated summary, clipped to the bound."""
    text = SummaryResponse.model_validate(obj).summary.strip()
    if not text:
        raise MalformedOutput("the summary is empty")
    return bounded_join([text], ctx.max_chars)
