"""English entity mentions by rules (docs/architecture.md#entities).

Two passes. First the speaker's named relations, by pattern: "my sister Anna" (a person
with relation "sister"), "my dog Max" / "a puppy named Max" (a pet), "Mel, my best
friend" and, without a name, "my mom" (the relation itself is the entity: ``rel:mother``).
Then capitalised spans: a run of capitalised words ("Anna", "New York", "University of
Toronto", "Dr. Lee"), typed by its own words (an organisation suffix, a small list of
brands and places) or the word before it ("moved to", "in" → place; "works at" →
organisation; "bought a" → product; "with", "met" → person), else a person. What is not
a name: the first word of a sentence unless it is known to be one (a speaker, or a name
said elsewhere in the text mid-sentence), months ("May"), weekdays, holidays, languages,
"I", all-capital shouting.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from models.rules import entity_words as w
from models.rules.entity_mention import EntityMention, Taken, entity_key, relation_key
from models.rules.filters import EN_EMPTY, EN_STOP

_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_TIME_PHRASE = re.compile(rf"\b(?:{w.EN_TIME_PHRASES})\b", re.I)
_NAME = r"[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*)?"
_MODS = r"(?:little|big|older|younger|elder|baby|twin|old|new|late|ex-|step-|dear)"  # not "best": "best friend" is one


def _alternation(words: Collection[str]) -> str:
    return "|".join(
        re.escape(x).replace(r"\ ", r"\s+") for x in sorted(words, key=len, reverse=True)
    )


_KIN_SOCIAL = {**w.EN_SOCIAL, **w.EN_KIN}
# The speaker's own: "my sister", and the stored memory's "User's sister" (the rules
# extractor writes a turn's facts about the user in the third person).
_SPEAKER = r"(?i:my|our|(?:the\s+)?user['’]s)"
_ALL_RELATIONS = {**_KIN_SOCIAL, **w.EN_PETS}
_MY_RELATION = re.compile(
    rf"\b{_SPEAKER}\s+(?:(?i:{_MODS})\s*)*(?P<rel>(?i:{_alternation(_ALL_RELATIONS)}))"
    rf"(?P<poss>['’]s)?\b(?:[ \t]*,?[ \t]*(?:(?:is[ \t]+|was[ \t]+)?(?:named|called)[ \t]+)?"
    rf"(?P<name>{_NAME}))?"
)
_NAMED_PET = re.compile(
    rf"\b(?P<rel>(?i:{_alternation(w.EN_PETS)}))[ \t]+(?:named|called)[ \t]+(?P<name>{_NAME})"
)
_APPOSITIVE = re.compile(
    rf"\b(?P<name>{_NAME})[ \t]*,[ \t]*{_SPEAKER}\s+(?:(?i:{_MODS})\s*)*"
    rf"(?P<rel>(?i:{_alternation(_KIN_SOCIAL)}))\b"
)
_ABBREVIATIONS = frozenset("mr mrs ms dr prof st jr sr vs".split())
_CONNECTORS = frozenset("of de van von da del la".split())
_ORDINARY = w.EN_STARTERS | EN_STOP | EN_EMPTY
_WORK_TITLE_BEFORE = frozenset(
    "read reading reread watched watching watch play played playing finished binged".split()
)


@dataclass
class _Span:
    start: int
    end: int
    words: list[str]
    initial: bool  # opens a sentence: a capital there says nothing
    before: tuple[str, ...]  # up to three lowercased words before it, nearest last
    after: str  # the lowercased word after it


def find_en(
    text: str, taken: Taken, speakers: Collection[str], known_keys: Collection[str] = ()
) -> list[EntityMention]:
    """The English mentions of ``text`` outside ``taken``; ``speakers`` are the speakers'
    name keys, ``known_keys`` the keys of names the user's memories already hold (a
    sentence-opening "Anna" is a name once the user has an Anna)."""
    for m in _TIME_PHRASE.finditer(text):
        taken.take(m.start(), m.end())
    out = _relations(text, taken)
    spans = list(_spans(text, taken))
    known = set(speakers) | set(known_keys) | {x.key for x in out}
    known |= {entity_key(" ".join(s.words)) for s in spans if not s.initial}
    for span in spans:
        name = text[span.start : span.end]
        kin = w.EN_KIN.get(entity_key(name)) if len(span.words) == 1 else None
        if span.initial and kin is None and not _initial_is_name(span, known):
            continue
        if kin is not None:  # "Mom said…": the relation, as "my mom" is
            out.append(EntityMention(name, relation_key(kin), "person", kin, span.start, span.end))
        else:
            kind = _type(span, speakers)
            out.append(EntityMention(name, entity_key(name), kind, None, span.start, span.end))
        taken.take(span.start, span.end)
    return out


def _relations(text: str, taken: Taken) -> list[EntityMention]:
    out: list[EntityMention] = []
    for pattern in (_APPOSITIVE, _NAMED_PET, _MY_RELATION):
        for m in pattern.finditer(text):
            if not taken.free(m.start(), m.end()):
                continue
            word = re.sub(r"\s+", " ", m.group("rel").casefold())
            relation = _ALL_RELATIONS[word]
            kind = "pet" if word in w.EN_PETS else "person"
            named = (
                None if m.groupdict().get("poss") else _name_span(text, m, pattern is _APPOSITIVE)
            )
            if named is not None:
                start, end = named
                name = text[start:end]
                out.append(EntityMention(name, entity_key(name), kind, relation, start, end))
                taken.take(min(start, m.start("rel")), max(end, m.end("rel")))
            elif pattern is _MY_RELATION and (word in w.EN_KIN or kind == "pet"):
                s, e = m.span("rel")
                out.append(EntityMention(text[s:e], relation_key(relation), kind, relation, s, e))
                taken.take(m.start(), e)
    return out


def _name_span(text: str, m: re.Match[str], lead: bool) -> tuple[int, int] | None:
    """Where the name of a relation match is, possessive dropped; None when it has none
    or what follows the relation word is no name ("my mom Monday", "my dad I…").
    ``lead``: ordinary words may open it ("Then Anna, my sister" → Anna)."""
    if m.group("name") is None:
        return None
    kept: list[re.Match[str]] = []
    for word in _WORD.finditer(text, *m.span("name")):
        bare = entity_key(word.group().replace("’", "'"))
        if bare in w.EN_NOT_NAMES or bare in _ALL_RELATIONS or bare in _ORDINARY:
            if lead and not kept:
                continue
            break
        kept.append(word)
        if re.search(r"['’]s?$", word.group()):
            break  # "my sister Anna's car": the name ends at the possessive
    if not kept:
        return None
    start = kept[0].start()
    return start, start + len(re.sub(r"['’]s?$", "", text[start : kept[-1].end()]))


def _spans(text: str, taken: Taken) -> Iterator[_Span]:
    """Runs of capitalised words, each with its context."""
    words = list(_WORD.finditer(text))
    run: list[int] = []  # indexes into ``words``
    initial = False
    for i, m in enumerate(words):
        opens = _opens_sentence(text, words[i - 1] if i else None, m)
        if run and (opens or not _joins(text, words[run[-1]], m)):
            yield from _emit(text, words, run, initial)
            run = []
        if _capitalised(m.group()) and taken.free(m.start(), m.end()):
            if not run:
                initial = opens
            run.append(i)
        elif run and m.group() in _CONNECTORS:
            run.append(i)  # kept only when a capitalised word follows (trimmed in _emit)
        elif run:
            yield from _emit(text, words, run, initial)
            run = []
    if run:
        yield from _emit(text, words, run, initial)


def _opens_sentence(text: str, prev: re.Match[str] | None, m: re.Match[str]) -> bool:
    if prev is None:
        return True
    gap = text[prev.end() : m.start()]
    if "\n" in gap or '"' in gap or "“" in gap or ":" in gap:
        return True
    if re.search(r"[.!?]", gap):
        return not (gap.strip() == "." and prev.group().casefold() in _ABBREVIATIONS)
    return False


def _joins(text: str, last: re.Match[str], m: re.Match[str]) -> bool:
    """Does ``m`` continue the run ending at ``last`` (a space, or "Dr. " before a name)?"""
    gap = text[last.end() : m.start()]
    if re.fullmatch(r"[ \t]+", gap):
        return not re.search(r"['’]s?$", last.group())  # "Anna's Mom": the run ends at 's
    return gap.strip() == "." and last.group().casefold() in w.EN_TITLES | _ABBREVIATIONS


def _capitalised(word: str) -> bool:
    bare = entity_key(word.replace("’", "'"))
    if bare in w.EN_NOT_NAMES or bare in EN_STOP:
        return False  # "May", "Monday", "The", "You" ("Thank You")
    if word.isupper():
        return len(word) > 1 and (bare in w.EN_ORGS or bare in w.EN_PLACES)
    return word[0].isupper() or bool(re.match(r"[a-z][A-Z]", word))  # "iPhone", "eBay"


def _emit(text: str, words: list[re.Match[str]], run: list[int], initial: bool) -> Iterator[_Span]:
    while run and not _capitalised(words[run[-1]].group()):
        run = run[:-1]  # a trailing connector
    if initial:
        while run and entity_key(words[run[0]].group()) in _ORDINARY:
            run, initial = run[1:], False  # "Yesterday Anna…": Anna is not sentence-initial
    if not run:
        return
    first, last = run[0], run[-1]
    before = tuple(x.group().casefold() for x in words[max(0, first - 3) : first])
    after = words[last + 1].group().casefold() if last + 1 < len(words) else ""
    start, end = words[first].start(), words[last].end()
    end = start + len(re.sub(r"['’]s?$", "", text[start:end]))
    yield _Span(start, end, [words[i].group() for i in run], initial, before, after)


def _initial_is_name(span: _Span, known: Collection[str]) -> bool:
    """A span opening a sentence is a name when known, or when what follows says so
    ("Anna said…"); a lone ordinary word ("Cooking is fun") is not."""
    key = entity_key(" ".join(span.words))
    if key in known or entity_key(span.words[0]) in known:
        return True
    if len(span.words) > 1:
        return True
    return span.after in {"said", "says", "told", "texted", "asked", "called"}


def _type(span: _Span, speakers: Collection[str]) -> str:
    key = entity_key(" ".join(span.words))
    first, last = entity_key(span.words[0]), entity_key(span.words[-1])
    before = span.before[:-1] if span.before[-1:] == ("the",) else span.before
    b1 = before[-1] if before else ""  # "visited the Louvre": the cue is "visited"
    b2 = before[-2] if len(before) > 1 else ""
    if key in speakers:
        return "person"
    if (len(span.words) > 1 and last in w.EN_ORG_SUFFIXES) or key in w.EN_ORGS:
        return "organization"
    if "of" in span.words and first in w.EN_ORG_SUFFIXES:
        return "organization"  # "University of Toronto", "Bank of America"
    if key in w.EN_PRODUCTS or re.match(r"[a-z][A-Z]", span.words[0]):
        return "product"
    if key in w.EN_PLACES:
        return "place"
    if b1 in w.EN_WORK_BEFORE or (b1 in {"at", "for"} and b2 in w.EN_WORK_BEFORE):
        return "organization"
    if b1 in w.EN_PLACE_BEFORE or b1 == "at":
        return "place"
    if b1 == "to" and b2 in w.EN_MOTION:
        return "place"
    if b1 == "from" and (b2 in w.EN_MOTION or b2 in w.EN_FROM_ORIGIN):
        return "place"
    if first in w.EN_TITLES or b1 in w.EN_PERSON_BEFORE:
        return "person"
    if b1 in w.EN_PRODUCT_BEFORE:
        return "product"
    if b1 in _WORK_TITLE_BEFORE:
        return "work"
    return "person" if len(span.words) <= 3 and "of" not in span.words else "other"
