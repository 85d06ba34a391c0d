"""Per-user in-memory BM25 index: the lexical channel of recall
(docs/architecture.md#the-recall-path).

The lexical channel is what finds an exact name, number or rare word that the dense
channel blurs ("张三在哪里工作" → "张三在腾讯工作", "Dune" → the Dune memory). CJK runs
are segmented with jieba (its dictionary ships in the wheel); Latin words and numbers
are split on non-word characters, and English words are reduced to their Snowball
(Porter2) stem through PyStemmer, so "moved"/"moving" and "allergic"/"allergy" are
one term (:func:`stem`). A user holds at most 2,000 active memories, so a
dict-of-postings index answers a query in well under a millisecond.

Scores come in two forms. :meth:`BM25Index.scores` are raw Okapi BM25 (k1, b).
:meth:`BM25Index.normalized` divides by the query's *ideal* score — the BM25 score a
document of average length containing every query term once would get, which is
Σ idf(t) — and clamps to 1. That is an idf-weighted coverage of the query, stable per
query and comparable with a cosine: a query that is just a name ("Alice", "张三")
scores 1.0 on a memory containing it, while a hit on one common word scores little.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import Stemmer

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RUNS = re.compile(rf"(?P<han>[{_HAN}]+)|(?P<word>[^\W_{_HAN}]+)")

# Function words that carry no recall signal; kept short on purpose.
STOPWORDS = frozenset(
    "a an the is are was were be been am do does did of to in on at for with by and or "
    "not no it its this that these those i me my we our you your he she him her his they "
    "them their what which who whom when where why how there here as from about s t "
    "的 了 吗 呢 吧 啊 是 在 和 与 及 或 也 都 就 我 你 他 她 它 我们 你们 他们 什么 怎么 "
    "哪 哪里 哪儿 谁 这 那 这个 那个 一个 有 没有 个 么".split()
)

_local = threading.local()  # a PyStemmer object must not be shared by threads
_jieba_lock = threading.Lock()
_jieba_ready = False


def _jieba() -> Any:
    """Import and initialize jieba once per process (its dictionary load takes ~1 s)."""
    global _jieba_ready
    import jieba

    if not _jieba_ready:
        with _jieba_lock:
            if not _jieba_ready:
                jieba.setLogLevel(logging.WARNING)
                logging.getLogger("jieba").setLevel(logging.WARNING)
                jieba.initialize()
                _jieba_ready = True
    return jieba


def stem(word: str) -> str:
    """The English Snowball stem of a lowercased word, with a trailing "i" dropped.

    Porter2 turns a final "y" into "i" ("allergy" → "allergi") but stems "allergic" to
    "allerg"; dropping that "i" (stems longer than four letters) joins them, and
    joins nothing that was apart before. Words with a digit and words of up to three
    letters stay as they are, so numbers, ids and short names are never cut. The
    stem is the same whatever the case the word came in, so a name matches however
    it is typed ("Alice"/"alice" → "alic", "Hannah's" → "hannah").
    """
    if len(word) <= 3 or not word.isalpha() or not word.isascii():
        return word  # outside the memo: numbers and ids would fill it with no gain
    return _stem(word)


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    out: str = stemmer.stemWord(word)  # PyStemmer ships no types
    return out[:-1] if len(out) > 4 and out.endswith("i") else out


def tokenize(text: str) -> list[str]:
    """Lowercased terms: Latin words stemmed (:func:`stem`), CJK runs segmented by jieba.

    Stopwords are dropped (before stemming) so that the query's coverage measures
    content words only.
    jieba's segmentation of unknown names is context-dependent ("张三在哪里" yields
    "张三在", "张三喜欢" yields "张三"; "王小明" vs "小明"), so a CJK word of three or
    more characters also emits its character bigrams, which makes the name match
    whichever way it was cut.
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    for match in _TOKEN_RUNS.finditer(text):
        run = match.group()
        if match.lastgroup == "han":
            for word in _jieba().lcut(run, HMM=True):
                if word in STOPWORDS:
                    continue
                out.append(word)
                if len(word) >= 3:
                    out.extend(word[i : i + 2] for i in range(len(word) - 1))
        elif run not in STOPWORDS:
            out.append(stem(run))
    return out


def indexed_text(content: str, entities: Iterable[Mapping[str, object]] = ()) -> str:
    """What the lexical channel indexes a memory by: its words, and the names of the
    entities it links that its words do not say (docs/architecture.md#entities), so
    "User's sister loves hiking", linked to Anna, is found by "What does Anna like?".
    The fused ranking still decides: a name is one more term, not a filter."""
    if not entities:
        return content
    folded = content.casefold()
    extra = [
        n
        for x in entities
        for n in (str(x.get("name") or ""), str(x.get("said") or ""))
        if n and n.casefold() not in folded
    ]
    return f"{content} {' '.join(dict.fromkeys(extra))}" if extra else content


@functools.lru_cache(maxsize=4096)
def term_counts(text: str) -> dict[str, int]:
    """The BM25 term counts of ``text`` (:func:`tokenize`), remembered for the last 4,096
    texts: a write tokenizes its memory in the writer's index, and again in each listener
    that mirrors it (the Redis snapshot, another cache). The dict is shared: do not
    change it."""
    return dict(Counter(tokenize(text)))


class BM25Index:
    """Okapi BM25 over one user's memories; docs are added, replaced and removed by id."""

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[str, int]] = {}  # term -> {doc_id: tf}
        self._doc_terms: dict[str, Counter[str]] = {}  # doc_id -> term counts
        self._doc_len: dict[str, int] = {}
        self._total_len = 0

    def __len__(self) -> int:
        return len(self._doc_len)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_len

    def add(self, doc_id: str, text: str) -> None:
        """Index ``text`` under ``doc_id``, replacing what the id held before."""
        self.add_tokens(doc_id, tokenize(text))

    def add_tokens(self, doc_id: str, tokens: Iterable[str]) -> None:
        """As :meth:`add`, for callers that tokenized already (e.g. a bulk load)."""
        self.remove(doc_id)
        counts = Counter(tokens)
        self._doc_terms[doc_id] = counts
        length = sum(counts.values())
        self._doc_len[doc_id] = length
        self._total_len += length
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[doc_id] = tf

    def terms(self, doc_id: str) -> dict[str, int]:
        """The term counts ``doc_id`` is indexed under (empty when not indexed)."""
        return dict(self._doc_terms.get(doc_id, ()))

    def remove(self, doc_id: str) -> bool:
        """Forget ``doc_id``; False when it was not indexed."""
        counts = self._doc_terms.pop(doc_id, None)
        if counts is None:
            return False
        self._total_len -= self._doc_len.pop(doc_id)
        for term in counts:
            posting = self._postings[term]
            del posting[doc_id]
            if not posting:
                del self._postings[term]
        return True

    def idf(self, term: str) -> float:
        """Lucene's non-negative BM25 idf: ``ln(1 + (N − n + 0.5)/(n + 0.5))``."""
        n_docs = len(self._doc_len)
        df = len(self._postings.get(term, ()))
        return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))

    def scores(self, query: str | list[str]) -> dict[str, float]:
        """Raw BM25 score of every document sharing at least one term with the query."""
        terms = set(tokenize(query) if isinstance(query, str) else query)
        n_docs = len(self._doc_len)
        if not terms or not n_docs:
            return {}
        avgdl = self._total_len / n_docs or 1.0
        k1, b = self.k1, self.b
        doc_len = self._doc_len
        out: dict[str, float] = {}
        for term in terms:
            posting = self._postings.get(term)
            if not posting:
                continue
            idf = self.idf(term)
            for doc_id, tf in posting.items():
                norm = k1 * (1.0 - b + b * doc_len[doc_id] / avgdl)
                out[doc_id] = out.get(doc_id, 0.0) + idf * tf * (k1 + 1.0) / (tf + norm)
        return out

    def normalized(self, query: str | list[str]) -> dict[str, float]:
        """Scores in [0, 1]: raw score over the query's ideal score Σ idf(t), clamped."""
        terms = list(dict.fromkeys(tokenize(query) if isinstance(query, str) else query))
        raw = self.scores(terms)
        if not raw:
            return {}
        ideal = sum(self.idf(t) for t in terms)
        return {doc_id: min(1.0, s / ideal) for doc_id, s in raw.items()}

    def search(self, query: str, limit: int | None = None) -> list[tuple[str, float]]:
        """Normalized hits, best first (ties by doc id), at most ``limit``."""
        hits = sorted(self.normalized(query).items(), key=lambda kv: (-kv[1], kv[0]))
        return hits if limit is None else hits[:limit]
