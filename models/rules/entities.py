"""Entity extraction by rules, no LLM: who and what a text names
(docs/architecture.md#entities).

``extract_entities`` finds people, places, organisations, products, pets and titles in
one text (a turn or a memory), English (``entities_en``) or Chinese (``entities_zh``),
plus the speaker's named relations ("my sister Anna", "我妹妹小美"). The conversation's
speaker names are people wherever they appear, but the user's own: the user is not an
entity of their own life, the other speaker is (``user_names``; a :class:`Speakers` from
:func:`conversation_speakers` carries them). "User" and "Assistant", the names a stored
memory gives unnamed speakers, are never entities. An app may declare the types it keeps;
a declared type the rules cannot recognise ("dish", "medication") is returned in
``unsupported`` for the caller to report, never raised: the LLM path may still know it.

Pure and deterministic, so replaying a turn gives the same mentions; the Chinese path
reuses the jieba tagging ``core.sameness`` caches.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace

from memstream.schemas.enums import Role
from memstream.schemas.events import Message
from models.lang import has_cjk
from models.rules import entity_words as w
from models.rules.entities_en import find_en, take_names
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
from models.rules.speakers import speaker_name

# Speaker names that are a role, not someone ("Assistant"): never an entity.
_ROLE_NAMES = frozenset("user assistant system ai bot 用户 助手 系统".split())


class Speakers(tuple[str, ...]):
    """A conversation's speaker names, in order, with ``user``: those of them that are
    the user themself. A plain sequence of names everywhere one is expected, so a caller
    that passes speaker names on (``dataflows.ingest.entities.linked``) passes this too."""

    user: tuple[str, ...] = ()

    def __new__(cls, names: Iterable[str], user: Iterable[str] = ()) -> Speakers:
        made = super().__new__(cls, names)
        made.user = tuple(user)
        return made


def conversation_speakers(messages: Sequence[Message]) -> Speakers:
    """Who speaks in a conversation, and which of them is the user: the name of its
    ``user`` turns; where several names speak as ``user`` (a two-person chat relayed
    for its owner), the first of them to speak, the chat's owner. Role names
    ("Assistant") are left out."""
    names: list[str] = []
    users: list[str] = []
    for m in messages:
        name = speaker_name(m)
        if name is None or entity_key(name) in _ROLE_NAMES:
            continue
        if name not in names:
            names.append(name)
        if m.role is Role.USER and name not in users:
            users.append(name)
    return Speakers(names, users[:1])


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
    user_names: Sequence[str] = (),
) -> EntityExtraction:
    """The entities ``text`` names. ``types`` None keeps the built-in types
    (:data:`BUILTIN_TYPES`); otherwise only the declared ones the rules recognise (an
    empty collection keeps none). ``known``: keys of names the user already has
    (``core.entity_resolution``), so a sentence-opening "Anna" is taken as a name.
    ``user_names``: the user's own names, no entity (also taken from ``speaker_names``
    when it is a :class:`Speakers`)."""
    if isinstance(types, str):
        types = (types,)  # one type, not its letters
    if isinstance(speaker_names, Speakers):
        user_names = (*user_names, *speaker_names.user)
    if isinstance(speaker_names, str):
        speaker_names = (speaker_names,)
    if isinstance(user_names, str):
        user_names = (user_names,)
    keep, unsupported = _declared(types)
    user = _names(user_names)
    user_keys = {entity_key(n) for n in user}
    names = tuple(
        n
        for n in _names(speaker_names)
        if entity_key(n) not in user_keys and entity_key(n) not in _ROLE_NAMES
    )
    mentions = tuple(m for m in _mentions(text, names, known, user) if m.type in keep)
    return EntityExtraction(mentions, unsupported)


def _names(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n.strip() for n in names if n and n.strip()))


def _declared(types: Collection[str] | None) -> tuple[frozenset[str], tuple[str, ...]]:
    if types is None:
        return frozenset(BUILTIN_TYPES), ()
    declared = list(dict.fromkeys(normalize_type(t) for t in types if t.strip()))
    keep = frozenset(t for t in declared if t in BUILTIN_TYPES)
    return keep, tuple(t for t in declared if t not in BUILTIN_TYPES)


@functools.lru_cache(maxsize=1 << 12)  # ingest and backfill ask again for the same text
def _mentions(
    text: str, speakers: tuple[str, ...], known: frozenset[str], user: tuple[str, ...] = ()
) -> tuple[EntityMention, ...]:
    taken = Taken(len(text))
    found = _speakers(text, speakers, taken)
    keys = frozenset(entity_key(n) for n in speakers)
    if has_cjk(text):
        take_names(text, user, taken)  # the user themself: no entity
        found += find_zh(text, taken)
    else:
        found += find_en(text, taken, keys, known - {entity_key(n) for n in user}, user)
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
