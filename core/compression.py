"""When memories may become one, and the one text they become
(docs/architecture.md#consolidation-and-paged-out-memories).

A merge must *compress*: the merged text is shorter than its members together and says
one thing. So only two kinds of memories merge, both decided on tokens, not cosines
(a sentence embedder scores related and unrelated facts alike high):

- **the same fact repeated** — the same content words (stemmed, :func:`core.lexical.
  tokenize`: the same names, numbers and dates among them) and the same negations, in
  whatever order or case: the merged text is the most complete member (the longest);
- **the same frame with other values** — token sequences identical but for one *slot*:
  a run of names, numbers, dates or places (:func:`core.sameness.latin_specific`, and
  in Chinese the words jieba tags as names, places, organisations, numerals or times),
  possibly already a list ("Zorvath001, Zorvath002 and Zorvath003"). The merged text is
  the frame once with every member's value listed: "visited Zorvath001, Zorvath002 and
  Zorvath003 and loved its bakery". A frame needs two content words besides the slot
  and the subject ("User lives in Berlin" / "… Lisbon" is a move, not a list), and a
  slot never starts a Latin sentence (a capitalized first word is no name).

Anything else — statements that are merely related, or share a session — is not merged.
A merge is accepted only when its text fits ``max_chars`` and is at most
:data:`MARGIN` of its members' length together. Pure; a text's shape is remembered.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from core.lexical import STOPWORDS, tokenize
from core.sameness import cjk_words, latin_specific

MARGIN = 0.8  # a merged text is at most 80 % of its members' texts together
MIN_FRAME_WORDS = 2  # content words a frame needs besides its slot and its subject
_SUBJECTS = frozenset({"user", "assistant", "用户", "助手"})  # the extractor's subjects
SAME = "same"
FRAME = "frame"

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKENS = re.compile(
    rf"(?P<han>[{_HAN}]+)"
    rf"|(?P<num>\d+(?:[:/.]\d+)+)"
    rf"|(?P<word>[^\W_{_HAN}]+(?:['’\-][^\W_{_HAN}]+)*)"
    r"|(?P<sep>[,、，])"
)
_CONNECTORS = frozenset({",", "、", "，", "and", "和", "及", "与"})
_NOT_FRAME_WORDS = STOPWORDS | _CONNECTORS | _SUBJECTS  # once, not per word of a frame
_CJK_VALUE_FLAGS = ("nr", "ns", "nt", "nz", "m", "t")
# A bare quantity (3, 2019, 3pm, 10km, 5.5, 12:30): "has 3 kids" / "has 4 kids" is a
# change of state, and "has 3 and 4 kids" would misstate both; full dates and names list.
_QUANTITY = re.compile(r"\d+(?:[.,:]\d+)*[^\W\d_]{0,3}")
_NEGATIONS = frozenset("not no never nor cannot n't 不 没 没有 未 别 无 非".split())
_NEG_HAN = re.compile(r"[不没未别无非]")
# splits a slot that is already a list; a comma before a year stays ("May 7, 2023")
_LIST_SPLIT = re.compile(r"\s*(?:,(?!\s*\d{4}\b)|\band\b|、|，|和|及|与)\s*")


@dataclass(frozen=True, slots=True)
class Token:
    norm: str
    start: int
    end: int
    value: bool  # a name, number, date or place: may fill a slot
    connector: bool


FrameKey = tuple[tuple[str, ...], tuple[str, ...]]  # the norms before and after a slot


@dataclass(frozen=True, slots=True)
class Shape:
    """What merging needs of one text: its duplicate key and its frames (key → slot)."""

    same_key: tuple[tuple[str, ...], int]  # (sorted terms, negations)
    frames: dict[FrameKey, tuple[int, int]]  # (prefix, suffix) norms → the slot's char span
    han: bool


@functools.lru_cache(maxsize=16384)
def shape(text: str) -> Shape:
    text = unicodedata.normalize("NFKC", text).strip()
    tokens = _tokens(text)
    negations = sum(t.norm in _NEGATIONS for t in tokens) + len(_NEG_HAN.findall(text))
    same_key = (tuple(sorted(tokenize(text))), negations)
    return Shape(same_key, _frames(text, tokens), bool(re.search(f"[{_HAN}]", text)))


def merged_text(texts: Sequence[str], max_chars: int) -> tuple[str, str] | None:
    """(text, kind) that ``texts`` (in time order) compress to, or None when they may not
    merge or their merge is not short enough."""
    texts = [unicodedata.normalize("NFKC", t).strip() for t in texts]
    if len(texts) < 2:
        return None
    shapes = [shape(t) for t in texts]
    if all(s.same_key == shapes[0].same_key for s in shapes):
        best = max(range(len(texts)), key=lambda i: (len(texts[i]), i))
        return _bounded(texts[best], SAME, texts, max_chars)
    common = set(shapes[0].frames).intersection(*(s.frames for s in shapes[1:]))
    for key in sorted(common):
        out = _bounded(frame_text(texts, [s.frames[key] for s in shapes]), FRAME, texts, max_chars)
        if out:
            return out
    return None


def frame_text(texts: Sequence[str], slots: Sequence[tuple[int, int]]) -> str:
    """The first text's frame with every text's slot value listed once, in order."""
    values: dict[str, str] = {}
    for text, (a, b) in zip(texts, slots, strict=True):
        for v in _LIST_SPLIT.split(text[a:b]):
            if v.strip():
                values.setdefault(v.strip().casefold(), v.strip())
    a, b = slots[0]
    return texts[0][:a] + join_values(list(values.values()), shape(texts[0]).han) + texts[0][b:]


def join_values(values: Sequence[str], han: bool) -> str:
    if len(values) == 1:
        return values[0]
    if han:
        return "、".join(values[:-1]) + "和" + values[-1]
    return ", ".join(values[:-1]) + " and " + values[-1]


def compresses(text: str, texts: Sequence[str], max_chars: int) -> bool:
    """Is ``text`` a real compression of ``texts`` (within the bound and the margin)?"""
    total = sum(len(t.strip()) for t in texts)
    return 0 < len(text) <= max_chars and len(text) <= MARGIN * total


# ---------------------------------------------------------------------------- internals
def _bounded(text: str, kind: str, texts: Sequence[str], max_chars: int) -> tuple[str, str] | None:
    return (text, kind) if compresses(text, texts, max_chars) else None


def _tokens(text: str) -> list[Token]:
    out: list[Token] = []
    for m in _TOKENS.finditer(text):
        kind, s = m.lastgroup, m.group()
        if kind == "han":
            pos = m.start()
            for word, flag in cjk_words(s):
                end = pos + len(word)
                if word.strip():
                    value = flag.startswith(_CJK_VALUE_FLAGS) or any(c.isdigit() for c in word)
                    out.append(Token(word, pos, end, value, word in _CONNECTORS))
                pos = end
        else:
            low = s.casefold()
            value = kind == "num" or (kind == "word" and latin_specific(s))
            out.append(Token(low, m.start(), m.end(), value, low in _CONNECTORS))
    return out


def _frames(text: str, tokens: list[Token]) -> dict[FrameKey, tuple[int, int]]:
    """Every maximal run of values (lists included) with the tokens around it."""
    value = [t.value for t in tokens]
    if tokens and not re.search(rf"[\d{_HAN}]", tokens[0].norm):
        value[0] = False  # a capitalized first word is no name
    out: dict[FrameKey, tuple[int, int]] = {}
    n, i = len(tokens), 0
    while i < n:
        if not value[i]:
            i += 1
            continue
        j = last = i
        while j + 1 < n and (value[j + 1] or tokens[j + 1].connector):
            j += 1
            if value[j]:
                last = j
        start, i = i, last + 1
        if all(_QUANTITY.fullmatch(t.norm) for t in tokens[start : last + 1] if t.value):
            continue  # counts, years, times: another value is a changed state, not a list
        prefix = tuple(t.norm for t in tokens[:start])
        suffix = tuple(t.norm for t in tokens[last + 1 :])
        words = [w for w in prefix + suffix if w not in _NOT_FRAME_WORDS]
        if len(words) >= MIN_FRAME_WORDS:
            out[(prefix, suffix)] = (tokens[start].start, tokens[last].end)
    return out
