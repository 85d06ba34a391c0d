"""The check an LLM's profile summary must pass before it replaces the plan
(docs/architecture.md#the-profile).

The rules plan the profile (:func:`core.profile.plan_profile`); an LLM may then say the
planned items again as fewer, tighter statements, each naming the planned items it
restates. Its answer is used only when it is *grounded*, else the plan is:

- every statement cites at least one planned item, and only items that exist;
- every name, number and date a statement states (:func:`core.sameness.specifics`)
  appears in the items it cites: a model that adds a town, a year or a person is
  refused, never trusted (consolidation checks the other direction: a merge must keep
  its members' specifics; a summary may leave some out);
- the statements together fit ``max_chars``, whole: an answer over the budget is
  refused, never clipped (clipping would cut a value in half);
- it says something: an empty answer is refused.

A grounded statement cites exactly the memories and source turns of the items it cites
(their union, in reading order, each once), so a deleted memory still finds every
statement that stands on it. Pure, no I/O: the answer comes in as plain values.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace

from core.profile import ProfileItem
from core.sameness import specifics

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_POSSESSIVE = re.compile("['’]")

# One statement of an answer: its text and the planned items it restates (indices
# into the plan, from 0).
Statement = tuple[str, Sequence[int]]


@dataclass(frozen=True, slots=True)
class Checked:
    """The answer as profile items, or why it was refused (a reason for logs and the
    change row: counts and positions only, never a memory's words)."""

    items: list[ProfileItem] | None
    reason: str | None = None


def check_summary(
    planned: Sequence[ProfileItem], answer: Sequence[Statement], max_chars: int
) -> Checked:
    """The grounded summary of ``planned`` that ``answer`` says, or the refusal's reason."""
    reason = summary_refusal([p.text for p in planned], answer, max_chars)
    if reason is not None:
        return Checked(None, reason)
    return Checked([_item(planned, text, cited) for text, cited in answer])


def grounded_summary(
    planned: Sequence[ProfileItem], answer: Sequence[Statement], max_chars: int
) -> list[ProfileItem] | None:
    """``answer`` as profile items when it is grounded in ``planned``, else None
    (:func:`check_summary` says why)."""
    return check_summary(planned, answer, max_chars).items


def summary_refusal(
    sources: Sequence[str], answer: Sequence[Statement], max_chars: int
) -> str | None:
    """Why ``answer`` is no grounded summary of the texts ``sources`` (None: it is one).

    Statements are numbered from 1 in the reason, as the prompt shows them."""
    if not answer:
        return "the summary is empty"
    total = 0
    for n, (text, cited) in enumerate(answer, 1):
        text = text.strip()
        if not text:
            return f"statement {n} is empty"
        if not cited:
            return f"statement {n} cites no item"
        unknown = [i for i in cited if isinstance(i, bool) or not 0 <= i < len(sources)]
        if unknown:
            return f"statement {n} cites {len(unknown)} item(s) that do not exist"
        invented = ungrounded(text, [sources[i] for i in cited])
        if invented:
            return (
                f"statement {n} states {invented} name(s), number(s) or date(s) "
                "its cited items do not hold"
            )
        total += len(text)
    if total > max_chars:
        return f"the summary has {total} chars, the budget is {max_chars}"
    return None


def ungrounded(text: str, sources: Sequence[str]) -> int:
    """How many of the names, numbers and dates of ``text`` none of ``sources`` holds.

    A Latin word or number must be a word of the sources (casefolded; "Anna's" counts
    as "Anna"; "3" is not found inside "2023"); a Chinese one must occur in their text
    (Chinese has no spaces, and jieba may cut a rephrased sentence otherwise). A run
    that mixes both ("2023年") is checked by its Latin parts: its Chinese words are
    checked on their own."""
    joined = unicodedata.normalize("NFKC", "\n".join(sources)).casefold()
    words = {w for run in _WORD.findall(joined) for part in _latin_parts(run) for w in part}
    missing = 0
    for spec in specifics(text):
        latin = _latin_parts(spec)
        if latin:
            missing += any(not (forms & words) for forms in latin)
        elif spec not in joined:
            missing += 1
    return missing


def _latin_parts(word: str) -> list[set[str]]:
    """The non-Chinese parts of a word, each as its forms: itself and, with a
    possessive, the name alone ("anna's" → {"anna's", "anna"})."""
    return [{part, _POSSESSIVE.split(part)[0]} for part in _HAN.split(word) if part]


def _item(planned: Sequence[ProfileItem], text: str, cited: Sequence[int]) -> ProfileItem:
    """A statement citing exactly what its planned items cite, in reading order."""
    chosen = [planned[i] for i in sorted(set(cited))]
    memory_ids = tuple(dict.fromkeys(m for p in chosen for m in p.memory_ids))
    msg_ids = tuple(dict.fromkeys(m for p in chosen for m in p.msg_ids))
    # What the items are about (their entity) is kept when every cited item shares it.
    about = {replace(p, text="", memory_ids=(), msg_ids=()) for p in chosen}
    shared = about.pop() if len(about) == 1 else ProfileItem("", (), ())
    return replace(shared, text=text.strip(), memory_ids=memory_ids, msg_ids=msg_ids)
