"""The forms entity names resolve by (docs/architecture.md#entities): shared by the
extractor (``models.rules``), which keys its mentions, and the resolution and views
(``core.entity_resolution``, the API), which key stored links the same way.
"""

from __future__ import annotations

import re
import unicodedata

RELATION_KEY_PREFIX = "rel:"

_POSSESSIVE = re.compile(r"(?:['’]s|(?<=s)['’])$", re.I)
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")
_SPACES = re.compile(r"\s+")


def entity_key(name: str) -> str:
    """The form two mentions of one name share: NFKC, case-folded, spaces collapsed,
    possessive and edge punctuation dropped ("Anna's" and "anna" → "anna")."""
    text = unicodedata.normalize("NFKC", name).strip()
    text = _POSSESSIVE.sub("", _EDGE_PUNCT.sub("", text))
    return _SPACES.sub(" ", _EDGE_PUNCT.sub("", text)).casefold()


def relation_key(relation: str) -> str:
    """The key of a relation said without a name ("my mom" → ``rel:mother``)."""
    return RELATION_KEY_PREFIX + relation.casefold()
