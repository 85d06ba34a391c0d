"""English entity mentions by rules (docs/architecture.md#entities).

Two passes. First the speaker's named relations, by pattern: "my sister Anna" (a person
with relation "sister"), "my dog Max" / "a puppy named Max" (a pet), "Mel, my best
friend" and, without a name, "my mom" (the relation itself is the entity: ``rel:mother``).
Then capitalised spans: a run of capitalised words ("Anna", "New York", "University of
Toronto", "Dr. Lee"), typed by its own words (an organisation suffix, a place's head
word such as Hotel or Lake, a maker before a model: "VW Golf" is one product, a small
list of brands and places) or the word before it ("to", "from", "in", "at", "near" →
place, unless a word that takes a person says otherwise: "talked to Anna", "at Lisa's";
"works at" → organisation; "bought a" → product; "with", "met" → person), or the list it
stands in ("Burgundy, Oregon and California": one place makes them all places); else a
person, unless it reads as a thing: a title-case quotation ('Red Light Reset'), a label
with a number ("Scene 1"), "the" before it. What is not a name: the first word of a
sentence unless it is known to be one (a speaker, or a name said elsewhere in the text
mid-sentence), months ("May"), weekdays, seasons, holidays, languages, "I", "User" and
"Assistant" (who a stored memory is about, not an entity of it), all-capital shouting.
The user's own name (``user_names``) is no entity either: "Caroline's sister Anna" is
the user's sister, as "my sister Anna" is.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterator, Sequence
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
_NAMED_PET = re.compile(
    rf"\b(?P<rel>(?i:{_alternation(w.EN_PETS)}))[ \t]+(?:named|called)[ \t]+(?P<name>{_NAME})"
)


@functools.lru_cache(maxsize=256)
def _relation_patterns(user_names: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """ "my sister Anna" and "Anna, my sister", the user's own name with 's counting as
    "my" ("Caroline's sister Anna" is the user Caroline's sister)."""
    speaker = _SPEAKER
    if user_names:
        own = "|".join(re.escape(n) for n in sorted(user_names, key=len, reverse=True))
        speaker = rf"(?:{_SPEAKER}|(?:{own})['’]s)"
    mine = re.compile(
        rf"\b{speaker}\s+(?:(?i:{_MODS})\s*)*(?P<rel>(?i:{_alternation(_ALL_RELATIONS)}))"
        rf"(?P<poss>['’]s)?\b(?:[ \t]*,?[ \t]*(?:(?:is[ \t]+|was[ \t]+)?(?:named|called)"
        rf"[ \t]+)?(?P<name>{_NAME}))?"
    )
    appositive = re.compile(
        rf"\b(?P<name>{_NAME})[ \t]*,[ \t]*{speaker}\s+(?:(?i:{_MODS})\s*)*"
        rf"(?P<rel>(?i:{_alternation(_KIN_SOCIAL)}))\b"
    )
    return mine, appositive


_MY_RELATION, _APPOSITIVE = _relation_patterns(())
_ABBREVIATIONS = frozenset("mr mrs ms dr prof st jr sr vs".split())
_CONNECTORS = frozenset("of de van von da del la".split())
_ORDINARY = w.EN_STARTERS | EN_STOP | EN_EMPTY
_WORK_TITLE_BEFORE = frozenset(
    "read reading reread watched watching watch play played playing finished binged".split()
)
# A quotation: opened after a space or a bracket, closed before one or a punctuation mark
# (an apostrophe inside a word, "What's", neither opens nor closes one).
_QUOTED = re.compile(
    r"(?:^|(?<=[\s(\[]))['‘\"“](?P<q>[^\n'‘’\"“”]*(?:['’][a-z0-9][^\n'‘’\"“”]*)*)['’\"”](?=$|[\s.,;:!?)\]])"
)
_NUMBERED = re.compile(r"[ \t]+#?\d")  # after a label: "Scene 1", "Phase #2"
_ABSTRACT_ENDS = (
    "tion",
    "sion",
    "ment",
    "ness",
    "ity",
    "ship",
    "ism",
    "ogy",
)  # not -ence: Florence
_BRACKETED = re.compile(r"\[(?P<q>[^\[\]\n]*)\]")  # "[Friend's Name]": a placeholder
_TITLE_SMALL = frozenset("of the a an and or & to for in on with at by from vs".split())
# What stands between two items of one list ("Burgundy, Oregon and California").
_LIST_GAP = re.compile(r"\s*(?:[,/&;]\s*(?:and\s+|or\s+)?|and\s+|or\s+)")
_STRONG_SHARED = frozenset({"place", "organization", "product"})


@dataclass
class _Span:
    start: int
    end: int
    words: list[str]
    initial: bool  # opens a sentence: a capital there says nothing
    before: tuple[str, ...]  # up to three lowercased words before it, nearest last
    after: str  # the lowercased word after it
    possessive: bool = False  # "Lisa's": said as someone's (the 's is not in the span)


def find_en(
    text: str,
    taken: Taken,
    speakers: Collection[str],
    known_keys: Collection[str] = (),
    user_names: Sequence[str] = (),
) -> list[EntityMention]:
    """The English mentions of ``text`` outside ``taken``; ``speakers`` are the speakers'
    name keys, ``known_keys`` the keys of names the user's memories already hold (a
    sentence-opening "Anna" is a name once the user has an Anna), ``user_names`` the
    user's own names (no entity: ``models.rules.entities``)."""
    for m in _TIME_PHRASE.finditer(text):
        taken.take(m.start(), m.end())
    out = _relations(text, taken, tuple(user_names))
    take_names(text, user_names, taken)
    spans = list(_spans(text, taken))
    known = set(speakers) | set(known_keys) | {x.key for x in out}
    known |= {entity_key(" ".join(s.words)) for s in spans if not s.initial}
    titles = _title_quotes(text)
    typed: list[tuple[_Span, str, bool]] = []
    for span in spans:
        name = text[span.start : span.end]
        kin = w.EN_KIN.get(entity_key(name)) if len(span.words) == 1 else None
        if span.initial and kin is None and not _initial_is_name(span, known):
            continue
        if kin is not None:  # "Mom said…": the relation, as "my mom" is
            out.append(EntityMention(name, relation_key(kin), "person", kin, span.start, span.end))
        elif any(s <= span.start and span.end <= e for s, e in titles):
            typed.append((span, "other", True))  # 'Red Light Reset': a title, not people
        else:
            typed.append((span, *_type(span, speakers, text)))
        taken.take(span.start, span.end)
    for span, kind, _ in _shared_by_lists(text, typed):
        name = text[span.start : span.end]
        out.append(EntityMention(name, entity_key(name), kind, None, span.start, span.end))
    return out


def take_names(text: str, names: Sequence[str], taken: Taken) -> None:
    """Claim every whole-word occurrence of ``names`` (the user's own: no mention)."""
    for name in sorted(names, key=len, reverse=True):
        for m in re.finditer(rf"(?<![\w]){re.escape(name)}(?![\w])", text):
            taken.take(*m.span())


def _title_quotes(text: str) -> list[tuple[int, int]]:
    """Where a quotation in title case stands ('Red Light Reset', "The Great Blizzard of
    '78'): every word capitalised but small ones. A quoted sentence ('Anna sits down')
    is none: the names in it are names."""
    out = []
    for m in (*_QUOTED.finditer(text), *_BRACKETED.finditer(text)):
        words = [x.group() for x in _WORD.finditer(m.group("q"))]
        if words and all(x[0].isupper() or x.casefold() in _TITLE_SMALL for x in words):
            out.append(m.span("q"))
    return out


def _shared_by_lists(
    text: str, typed: list[tuple[_Span, str, bool]]
) -> list[tuple[_Span, str, bool]]:
    """Items of one list are one kind: a name typed only by default takes the place,
    organisation or product type of a neighbour typed by its words or cue ("Burgundy,
    Oregon and California", "Tekapo, Mt Cook, Queenstown")."""
    out = list(typed)
    shorter: dict[str, set[str]] = {}  # each first words of a surely typed name: its types
    for span, kind, sure in out:
        if sure and kind != "other":
            words = entity_key(" ".join(span.words)).split(" ")
            for n in range(1, len(words)):
                shorter.setdefault(" ".join(words[:n]), set()).add(kind)
    for i, (span, _kind, sure) in enumerate(out):
        kinds = shorter.get(entity_key(" ".join(span.words)), set())
        if not sure and len(kinds) == 1:
            out[i] = (span, next(iter(kinds)), True)  # "Sieben Linden Ecovillage … Sieben Linden"
    for order in (range(len(out) - 1), range(len(out) - 2, -1, -1)):
        for i in order:
            (a, ka, sa), (b, kb, sb) = out[i], out[i + 1]
            gap = text[a.end : b.start]
            gap = gap[2:] if gap[:2] in ("'s", "’s") else gap
            if not _LIST_GAP.fullmatch(gap) or sa == sb:
                continue
            if sa and ka in _STRONG_SHARED:
                out[i + 1] = (b, ka, True)
            elif sb and kb in _STRONG_SHARED:
                out[i] = (a, kb, True)
    return out


def _relations(text: str, taken: Taken, user_names: tuple[str, ...] = ()) -> list[EntityMention]:
    out: list[EntityMention] = []
    my_relation, appositive = _relation_patterns(user_names)
    for pattern in (appositive, _NAMED_PET, my_relation):
        for m in pattern.finditer(text):
            if not taken.free(m.start(), m.end()):
                continue
            word = re.sub(r"\s+", " ", m.group("rel").casefold())
            relation = _ALL_RELATIONS[word]
            kind = "pet" if word in w.EN_PETS else "person"
            named = (
                None if m.groupdict().get("poss") else _name_span(text, m, pattern is appositive)
            )
            if named is not None:
                start, end = named
                name = text[start:end]
                out.append(EntityMention(name, entity_key(name), kind, relation, start, end))
                taken.take(min(start, m.start("rel")), max(end, m.end("rel")))
            elif pattern is my_relation and (word in w.EN_KIN or kind == "pet"):
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
        if re.match(r"\.\s*,", gap.strip()):
            return False  # "e.g., Lekki": no sentence ends with ".,"
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
        return len(word) > 1 and (bare in w.EN_ORGS or bare in w.EN_PLACES or bare in w.EN_BRANDS)
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
    bare = re.sub(r"['’]s?$", "", text[start:end])
    possessive = len(bare) < end - start
    end = start + len(bare)
    yield _Span(start, end, [words[i].group() for i in run], initial, before, after, possessive)


def _initial_is_name(span: _Span, known: Collection[str]) -> bool:
    """A span opening a sentence is a name when known, or when what follows says so
    ("Anna said…"); a lone ordinary word ("Cooking is fun") is not."""
    key = entity_key(" ".join(span.words))
    if key in known or entity_key(span.words[0]) in known:
        return True
    if len(span.words) > 1:
        return True
    return span.after in {"said", "says", "told", "texted", "asked", "called"}


def _type(span: _Span, speakers: Collection[str], text: str) -> tuple[str, bool]:
    """The span's type, and whether its words or a cue said so (False: a default, which
    a list's other items may overrule)."""
    key = entity_key(" ".join(span.words))
    first, last = entity_key(span.words[0]), entity_key(span.words[-1])
    before = span.before[:-1] if span.before[-1:] == ("the",) else span.before
    b1 = before[-1] if before else ""  # "visited the Louvre": the cue is "visited"
    b2 = before[-2] if len(before) > 1 else ""
    many = len(span.words) > 1
    if key in speakers:
        return "person", True
    if (many and last in w.EN_ORG_SUFFIXES) or key in w.EN_ORGS:
        return "organization", True
    if "of" in span.words and first in w.EN_ORG_SUFFIXES:
        return "organization", True  # "University of Toronto", "Bank of America"
    if many and first in w.EN_BRANDS:
        return "product", True  # "VW Golf": the maker and its model, one product
    if key in w.EN_PRODUCTS or re.match(r"[a-z][A-Z]", span.words[0]):
        return "product", True
    if key in w.EN_PLACES or (many and (last in w.EN_PLACE_HEADS or first in w.EN_PLACE_LEADS)):
        return "place", True
    if span.possessive and b1 in {"at", "to", "from", "in", "near"}:
        return "person", True  # "at Lisa's house": Lisa's, not a place called Lisa
    if b1 in w.EN_WORK_BEFORE or (b1 in {"at", "for"} and b2 in w.EN_WORK_BEFORE):
        return "organization", True
    if b1 in w.EN_PLACE_BEFORE or b1 == "at":
        return "place", True
    if b1 in {"to", "from"} and b2 not in w.EN_TO_PERSON:
        return "place", True  # "took them to Lyon"; not "talked to Anna"
    if first in w.EN_TITLES or b1 in w.EN_PERSON_BEFORE:
        return "person", True
    if key in w.EN_BRANDS:
        return ("product" if b1 in w.EN_PRODUCT_BEFORE else "organization"), True
    if b1 in w.EN_PRODUCT_BEFORE:
        return "product", True
    if b1 in _WORK_TITLE_BEFORE:
        return "work", True
    if _a_thing(span, text):
        return "other", False
    return ("person" if len(span.words) <= 3 and "of" not in span.words else "other"), False


def _a_thing(span: _Span, text: str) -> bool:
    """Read as a thing, not someone: a label with its number ("Scene 1", "Phase 2"),
    "the" before it ("the Asanify bot"), a word made like an abstract noun ("Advisor
    Selection", "Fitness": no one is named …tion or …ness), or several words opening a
    sentence with no word saying they are someone ("Upper Body Strength is skipped")."""
    if _NUMBERED.match(text, span.end):
        return True
    if any(len(x) > 5 and x.casefold().endswith(_ABSTRACT_ENDS) for x in span.words):
        return True
    if span.before[-1:] == ("the",):
        return True
    return span.initial and len(span.words) > 1 and span.after not in w.EN_PERSON_AFTER
