"""Entity extraction by rules, no LLM: who and what a text names
(docs/architecture.md#entities).

``extract_entities`` finds people, places, organisations, products, pets and titles in
one text (a turn or a memory), English (``entities_en``) or Chinese (``entities_zh``),
plus the speaker's named relations ("my sister Anna", "我妹妹小美"). The conversation's
speaker names are people wherever they appear. An app may declare the types it keeps;
a declared type the rules cannot recognise ("dish", "medication") is returned in
``unsupported`` for the caller to report, never raised: the LLM path may still know it.

Pure and deterministic, so replaying a turn gives the same mentions; the Chinese path
reuses the jieba tagging ``core.sameness`` caches.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from models.lang import has_cjk
from models.rules import entity_words as w
from models.rules.entities_en import find_en
from models.rules.entities_zh import find_zh
from models.rules.entity_mention import (
    BUILTIN_TYPES,
    RELATION_KEY_PREFIX,
    EntityMention,
    Taken,
    entity_key,
    normalize_type,
)
from models.rules.filters import EN_STOP


@dataclass(frozen=True)
class EntityExtraction:
    """The mentions of a text in order, and the declared types the rules ignored."""

    mentions: tuple[EntityMention, ...]
    unsupported: tuple[str, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        """One line per ignored type, for the task's answer."""
        return tuple(
            f"entity type {t!r} is not recognised by the rules extractor and was ignored"
            for t in self.unsupported
        )


def extract_entities(
    text: str,
    *,
    speaker_names: Sequence[str] = (),
    types: Collection[str] | None = None,
    known: frozenset[str] = frozenset(),
) -> EntityExtraction:
    """The entities ``text`` names. ``types`` None keeps the built-in types
    (:data:`BUILTIN_TYPES`); otherwise only the declared ones the rules recognise (an
    empty collection keeps none). ``known``: keys of names the user already has
    (``core.entity_resolution``), so a sentence-opening "Anna" is taken as a name."""
    if isinstance(types, str):
        types = (types,)  # one type, not its letters
    if isinstance(speaker_names, str):
        speaker_names = (speaker_names,)
    keep, unsupported = _declared(types)
    names = tuple(dict.fromkeys(n.strip() for n in speaker_names if n and n.strip()))
    mentions = tuple(m for m in _mentions(text, names, known) if m.type in keep)
    return EntityExtraction(mentions, unsupported)


def _declared(types: Collection[str] | None) -> tuple[frozenset[str], tuple[str, ...]]:
    if types is None:
        return frozenset(BUILTIN_TYPES), ()
    declared = list(dict.fromkeys(normalize_type(t) for t in types if t.strip()))
    keep = frozenset(t for t in declared if t in BUILTIN_TYPES)
    return keep, tuple(t for t in declared if t not in BUILTIN_TYPES)


@functools.lru_cache(maxsize=1 << 12)  # ingest and backfill ask again for the same text
def _mentions(
    text: str, speakers: tuple[str, ...], known: frozenset[str]
) -> tuple[EntityMention, ...]:
    taken = Taken(len(text))
    found = _speakers(text, speakers, taken)
    keys = frozenset(entity_key(n) for n in speakers)
    found += find_zh(text, taken) if has_cjk(text) else find_en(text, taken, keys, known)
    return _one_type_per_name(sorted((m for m in found if m.key), key=lambda m: m.start))


def _speakers(text: str, speakers: tuple[str, ...], taken: Taken) -> list[EntityMention]:
    """Every occurrence of a speaker's name, as a person. A Latin name matches whole
    words, in any case unless its lowercase form is an ordinary word ("Will", "May")."""
    out: list[EntityMention] = []
    for name in sorted(speakers, key=len, reverse=True):
        key = entity_key(name)
        if not key:
            continue
        if has_cjk(name):
            pattern = re.compile(re.escape(name))
        else:
            flags = 0 if key in EN_STOP or _ordinary(key) else re.I
            pattern = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])", flags)
        for m in pattern.finditer(text):
            if taken.free(*m.span()):
                out.append(EntityMention(m.group(), key, "person", None, *m.span()))
                taken.take(*m.span())
    return out


def _ordinary(key: str) -> bool:
    return key in w.EN_NOT_NAMES or key in w.EN_STARTERS or key in _COMMON_NAME_WORDS


# Given names that are also everyday words: matched only as written.
_COMMON_NAME_WORDS = frozenset(
    "will bill rose grace hope joy summer june april may mark sue pat art ray faith".split()
)


def _one_type_per_name(mentions: list[EntityMention]) -> tuple[EntityMention, ...]:
    """A name typed by a strong cue (a speaker, a relation word) keeps that type at its
    other mentions in the text ("堂弟浩浩…浩浩弄坏了": both 浩浩 are the cousin)."""
    strong = {
        m.key: m.type
        for m in mentions
        if m.relation is not None and not m.key.startswith(RELATION_KEY_PREFIX)
    }
    return tuple(
        replace(m, type=strong[m.key]) if m.key in strong and m.type != strong[m.key] else m
        for m in mentions
    )
