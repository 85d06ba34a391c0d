"""When two facts say the same thing: a cosine is not enough
(docs/architecture.md#dedup-and-evolution).

Sentence embedders score "I visited Zorvath003 and loved its bakery" and "… Zorvath017 …"
above 0.95: the sentences differ only in a name, and a name is a few tokens among many.
So the near-duplicate rule of evolution asks two things: a high cosine *and* the same
**specifics** — the tokens that tell otherwise-alike facts apart:

- numbers and anything with a digit ("2023-05-07", "Zorvath003", "3 kids", "10:30");
- names: capitalized Latin words (sentence-initial ones too: "Priya loves tea" and
  "Tomás loves tea" are two people), minus a short list of function words;
- in CJK text, the words jieba tags as nouns (names, places and organisations
  included), numerals and time words: 深圳 vs 广州, 三月 vs 五月, 女儿 vs 儿子. Nouns
  count in Chinese because an English-only embedder (MiniLM) maps most Chinese
  characters to one unknown token, so its cosine cannot tell two Chinese facts apart.

Two texts with different sets of specifics are two facts however close their cosine.
Pure, no I/O (jieba's dictionary ships in its wheel).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import unicodedata
from typing import Any

from core import posseg_viterbi
from core.lexical import STOPWORDS

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_DIGIT = re.compile(r"\d")
# Capitalized words that are no name: sentence starters and the extractor's subjects.
_NOT_NAMES = frozenset(
    """the a an this that these those there here it its my our your his her their we you
    he she they i i'm i've i'll i'd user assistant user's assistant's on in at by for with
    and but so if when then also just yes no ok okay oh well""".split()
)
# jieba posseg flag prefixes of the words that tell facts apart: nouns, numerals, time.
_CJK_FLAGS = ("n", "m", "t")
# Time words that point at no date ("now", "recently"): no specific.
_CJK_DEICTIC = frozenset("现在 目前 当时 以前 之前 以后 之后 最近 刚才 马上 将来 平时 一直".split())

_lock = threading.Lock()
_ready = False


@functools.lru_cache(maxsize=1 << 14)  # the writer asks again for the texts it compares
def specifics(text: str) -> frozenset[str]:
    """The names, numbers and dates of ``text``, casefolded."""
    text = unicodedata.normalize("NFKC", text)
    out: set[str] = set()
    for word in _LATIN_WORD.findall(text):
        if latin_specific(word):
            out.add(word.casefold())
    if _HAN.search(text):
        out.update(_cjk_specifics(text))
    return frozenset(out)


def latin_specific(word: str) -> bool:
    """Is this Latin word a specific (a digit in it, or a capitalized non-function word)?"""
    return bool(_DIGIT.search(word)) or (word[:1].isupper() and word.casefold() not in _NOT_NAMES)


def warm() -> None:
    """Load jieba's dictionary and tag tables now (~0.8 s), not on a first Chinese text."""
    _posseg("预热")


def cjk_words(text: str) -> list[tuple[str, str]]:
    """jieba's words of ``text`` with their part-of-speech flags (they concatenate to it)."""
    return list(_posseg(text))


def same_specifics(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` name the same names, numbers and dates."""
    return specifics(a) == specifics(b)


def _cjk_specifics(text: str) -> set[str]:
    out: set[str] = set()
    for word, flag in _posseg(text):
        word = word.strip()
        if not word or word in STOPWORDS or word in _CJK_DEICTIC or not _HAN.search(word):
            continue  # Latin words were taken above
        if flag.startswith(_CJK_FLAGS):
            out.add(word)
    return out


@functools.lru_cache(
    maxsize=1 << 14
)  # a text is tagged once: dedup, decide and compression all ask
def _posseg(text: str) -> tuple[tuple[str, str], ...]:
    global _ready
    import jieba
    import jieba.posseg

    if not _ready:
        with _lock:
            if not _ready:
                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                # the same tags, ~3x faster (core.posseg_viterbi says why it is ours)
                jieba.posseg.viterbi = posseg_viterbi.viterbi
                _ready = True
    pairs: list[Any] = jieba.posseg.lcut(text)  # jieba ships no types: pairs (word, flag)
    return tuple((p.word, p.flag) for p in pairs)
