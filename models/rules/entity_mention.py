"""One entity mention found in a text, and the key it resolves by
(docs/architecture.md#entities).

The value lives in ``models/`` beside the rules that make it: only the extraction paths
(rules here, the LLM prompt later) build mentions. What gets stored per memory will be a
wire model in ``memstream/schemas/`` once entities are kept; this dataclass is the extractor's own
answer, frozen so a cached answer cannot be changed by a caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# re-exported: the extractor's modules key their mentions through this one
from core.entity_keys import RELATION_KEY_PREFIX as RELATION_KEY_PREFIX
from core.entity_keys import entity_key as entity_key
from core.entity_keys import relation_key as relation_key

# The types the rules recognise, in the order a reader would list them. "work" is a
# title (a book, a film, a game: 《三体》); "other" a proper noun the rules cannot type.
BUILTIN_TYPES: tuple[str, ...] = (
    "person",
    "place",
    "organization",
    "product",
    "pet",
    "work",
    "other",
)
# Spellings an app may declare for a built-in type.
TYPE_ALIASES: dict[str, str] = {
    "people": "person",
    "persons": "person",
    "places": "place",
    "location": "place",
    "locations": "place",
    "organisation": "organization",
    "organisations": "organization",
    "organizations": "organization",
    "org": "organization",
    "orgs": "organization",
    "company": "organization",
    "companies": "organization",
    "products": "product",
    "pets": "pet",
    "animal": "pet",
    "animals": "pet",
    "works": "work",
    "title": "work",
    "titles": "work",
}
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class EntityMention:
    """A person, place, organisation, product, pet or title named in a text.

    ``name`` is the name as said, possessive dropped ("Anna's" → "Anna"); for a relation
    said without a name ("my mom", "妈妈") it is the relation word as said. ``key`` is the
    form resolution joins on: :func:`entity_key` of the name, or ``rel:<relation>`` for an
    unnamed relation. ``relation`` is the canonical relation or animal word said with it
    ("sister" for "my sister Anna", "dog" for "my dog Max", "妹妹" for "我妹妹小美"), else
    None. ``start``/``end`` index ``name`` in the text (``text[start:end] == name``).
    """

    name: str
    key: str
    type: str
    relation: str | None
    start: int
    end: int


def normalize_type(name: str) -> str:
    """An app's declared type in the form the rules compare ("Places" → "place")."""
    folded = _SPACES.sub(" ", name.strip()).casefold()
    return TYPE_ALIASES.get(folded, folded)


class Taken:
    """The characters of a text already claimed by a mention (or masked as a date
    phrase): each later rule skips them, so one name gives one mention."""

    def __init__(self, size: int) -> None:
        self._mask = bytearray(size)

    def free(self, start: int, end: int) -> bool:
        """True when nothing in ``[start, end)`` is claimed yet."""
        return not any(self._mask[start:end])

    def take(self, start: int, end: int) -> None:
        self._mask[start:end] = b"\x01" * (end - start)
