"""Profile summary prompt (docs/architecture.md#the-profile).

The rules plan the profile: the user's most telling memories, compressed and spread,
as numbered items that fit the budget (:func:`core.profile.plan_profile`). The model
says them again as fewer, tighter statements about who the user is and what matters
to them now, and each statement names the items it restates: those citations are how
it keeps citing exactly the memories and source turns it states. It may leave an item
out; it may never add anything. An answer that cites an item not shown, states a name,
number or date its items do not hold, or exceeds the budget is refused
(:func:`core.profile_summary.summary_refusal`): asked again once, then the plan is used.
Never clipped: a clipped statement would lose a value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from core.profile_summary import summary_refusal
from memstream.schemas.facts import ChatMessage
from memstream.schemas.json_types import JsonObject
from models.errors import MalformedOutput
from models.lang import dominant_language

VERSION = "profile_summary/v1"


class SummaryStatement(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1)
    sources: list[int] = Field(min_length=1)  # item numbers as shown, from 1


class ProfileSummaryResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    items: list[SummaryStatement] = Field(min_length=1)


@dataclass(frozen=True)
class ProfileSummaryContext:
    items: tuple[str, ...]  # the planned items in reading order; shown numbered from 1
    max_chars: int
    language: str  # "en" | "zh": a hint, the items' own language wins


def build_context(items: Sequence[str], max_chars: int) -> ProfileSummaryContext:
    texts = tuple(t.strip() for t in items)
    return ProfileSummaryContext(texts, max_chars, dominant_language(list(texts)))


_SYSTEM = """You write the profile a memory system keeps about one person: who they are and what matters to them now. An agent reads it at the start of a session, before the person says anything. You get the profile's items, numbered, the most telling first; say them again as fewer, tighter statements.

Rules:
- Use only what the items say. Never add a name, number, date, place or fact that is not in the items you cite, no advice, no guesses, no comments.
- Each statement lists in "sources" the numbers of the items it restates. Cite every item whose content the statement uses, and only those.
- Join items about the same person, thing or topic into one statement. Keep names, numbers, dates and places as the items write them. You may leave out an item that says little.
- Keep who is who: begin a statement with whom it is about, named as the items name them ("Anna", "The user"). Never turn a named person into "the user".
- Most telling first. Write in the language of the items. At most {max_chars} characters for all statements together.
- Answer with one JSON object only: {{"items": [{{"text": str, "sources": [int]}}]}}.

Examples:
Items:
1. Priya works as a nurse in Leeds
2. Priya has a daughter, Mia, born 2019
3. Priya went to a pottery class on 2023-05-07 and 2023-05-14
4. Priya is a night-shift nurse
Output: {{"items": [{{"text": "Priya is a night-shift nurse in Leeds", "sources": [1, 4]}}, {{"text": "Priya has a daughter, Mia, born 2019", "sources": [2]}}, {{"text": "Priya went to pottery classes on 2023-05-07 and 2023-05-14", "sources": [3]}}]}}

Items:
1. 用户住在深圳
2. 用户每天早上喝龙井
3. 用户的妹妹小美在广州读书
Output: {{"items": [{{"text": "用户住在深圳，每天早上喝龙井", "sources": [1, 2]}}, {{"text": "用户的妹妹小美在广州读书", "sources": [3]}}]}}"""


def to_messages(ctx: ProfileSummaryContext) -> list[ChatMessage]:
    """The chat messages for one profile summary call (pure)."""
    listed = "\n".join(f"{n}. {text}" for n, text in enumerate(ctx.items, 1))
    hint = "Chinese" if ctx.language == "zh" else "English"
    user = (
        f"Items:\n{listed}\n\nWrite the profile's statements (in {hint}, at most "
        f"{ctx.max_chars} characters together). Return the JSON object."
    )
    system = _SYSTEM.format(max_chars=ctx.max_chars)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def to_statements(obj: JsonObject, ctx: ProfileSummaryContext) -> list[tuple[str, list[int]]]:
    """The validated statements, their sources as indices into ``ctx.items`` (from 0).

    An answer the check refuses raises MalformedOutput, so the model is asked again
    once with the reason (counts and positions, never the memories' words)."""
    answer = [
        (s.text.strip(), list(dict.fromkeys(n - 1 for n in s.sources)))
        for s in ProfileSummaryResponse.model_validate(obj).items
    ]
    refused = summary_refusal(ctx.items, answer, ctx.max_chars)
    if refused is not None:
        raise MalformedOutput(refused)
    return answer
