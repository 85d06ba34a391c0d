"""Whether a turn carries content: the one definition the no-LLM mode keeps turns by.

docs/architecture.md#what-is-remembered: in ``rules`` mode a turn that carries content but
yields no rule fact is kept as one EPISODIC memory, so nothing said is lost; greetings,
filler, questions and pure reactions are not kept. "Content" is deliberately broad (recall
over precision here): any clause that is not a question or a request to the assistant and
still has a word after greetings, fillers, vocatives ("…, Priya!"), pronouns, particles and
reaction words ("wow", "sounds", "太棒了") are taken away. Third-person and subject-less
statements count ("The marathon in Boston is on April 17", "公司下个月要搬到杭州"); general knowledge
counts too ("Water boils at 100 °C"): telling it from a fact needs understanding the rules
do not have, and the cost of keeping it is one small memory.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from models.lang import has_cjk
from models.rules import chitchat
from models.rules.clauses import split_clauses
from models.rules.filters import EN_EMPTY, EN_STOP, ZH_STOP, segment

_EN_WORD = re.compile(r"[^\W_](?:[\w'-]*[^\W_])?")
_EN_QUESTION = re.compile(
    r"^(?:(?:how|what|where|when|who|why|which|whose)\s+(?:is|are|was|were|do|does|did|"
    r"about|have|has|had|can|could|would|will|should|'s|s)\b|(?:how|what)'s\b|"
    r"(?:do|does|did|are|is|am|was|were|have|has|had|can|could|would|will|should|shall|"
    r"may|might|wanna|want)\s+(?:you|u|ya|we|they|he|she|it|there|i|that|this)\b)",
    re.I,
)
_EN_REQUEST = re.compile(
    r"^(?:please|pls|plz|can you|could you|would you|will you|tell me|show me|give me|"
    r"help me|recommend|suggest|explain|write|translate|summari[sz]e)\b",
    re.I,
)
_ZH_QUESTION = re.compile(
    r"[?？]\s*$|[吗嘛么呢]\s*[。.!！~～]*\s*$|怎么样|怎样|如何|好不好|是不是|有没有|要不要|"
    r"能不能|可不可以|会不会|行不行|对不对|你呢|为什么|为啥"
)
_ZH_REQUEST = re.compile(r"^(?:请|帮我|给我|告诉我|麻烦|能否|可以帮|帮忙|你能|你可以|您能)")
_CAPS = r"[^\W\d_a-z][\w'-]*"  # a capitalized word: a possible name
_EN_LEAD_VOCATIVE = re.compile(rf"^(?:{_CAPS}\s+)?{_CAPS}\s*,\s*")
_EN_TAIL_VOCATIVE = re.compile(rf"\s*,\s*(?:{_CAPS}\s+)?{_CAPS}\s*[.!?]*\s*$")


def carries_content(text: str, names: Collection[str] = ()) -> bool:
    """True when the turn states something worth a memory; ``names`` are the
    conversation's speaker names, which alone are only vocatives ("Thanks, Priya!")."""
    return bool(content_clauses(text, names))


def content_clauses(text: str, names: Collection[str] = ()) -> list[str]:
    """The clauses of a turn that carry content, in order, greetings and fillers peeled."""
    return [c for c in split_clauses(text, max_len=None) if clause_carries_content(c, names)]


def clause_carries_content(clause: str, names: Collection[str] = ()) -> bool:
    """One clause: not a question or request, and some word beyond chit-chat."""
    zh = has_cjk(clause)
    if is_question(clause, zh) or is_request(clause, zh):
        return False
    return bool(meaningful_words(strip_vocatives(clause, names), zh))


def is_question(clause: str, zh: bool) -> bool:
    """Asks rather than states: ends with "?", or opens like one ("How are you", "Do you…"),
    or, in Chinese, ends with a question particle or holds an A-not-A form."""
    if zh:
        return _ZH_QUESTION.search(clause) is not None
    text = clause.strip()
    return text.endswith("?") or _EN_QUESTION.match(text) is not None


def is_request(clause: str, zh: bool) -> bool:
    """Asks the other party to do something ("Please tell me a joke", "请帮我订票"); a
    proposal that states a plan ("Let's meet at the cafe on Friday") is not one."""
    return bool((_ZH_REQUEST if zh else _EN_REQUEST).match(clause.strip()))


def strip_vocatives(clause: str, names: Collection[str] = ()) -> str:
    """Drop the addressee: a known speaker name at either end, or (English) a
    capitalized word or two set off by a comma at the start or the end."""
    text = clause.strip()
    for name in sorted(names, key=len, reverse=True):
        text = _strip_name(text, name)
    if not has_cjk(text):
        text = _EN_TAIL_VOCATIVE.sub("", _EN_LEAD_VOCATIVE.sub("", text))
    return text


def meaningful_words(clause: str, zh: bool) -> list[str]:
    """The words left once phrases, stop words, reactions and laughter are taken away."""
    if zh:
        rest = chitchat.ZH_PHRASES.sub(" ", clause)
        return [
            w
            for w in segment(rest)
            if w.strip()
            and w not in ZH_STOP
            and w not in chitchat.ZH_MORE_STOP
            and not chitchat.ZH_LAUGH.match(w)
            and any(ch.isalnum() for ch in w)
        ]
    rest = chitchat.EN_PHRASES.sub(" ", clause)
    return [w for w in (t.lower() for t in _EN_WORD.findall(rest)) if not _chitchat_word(w)]


def _chitchat_word(word: str) -> bool:
    if len(word) == 1 and not word.isdigit():
        return True  # "x" of a sign-off, "k": a letter alone says nothing
    for w in (word, word.removesuffix("'s")):
        if (
            w in EN_STOP
            or w in EN_EMPTY
            or w in chitchat.EN_REACTIONS
            or w in chitchat.EN_MORE_STOP
            or chitchat.EN_LAUGH.match(w)
        ):
            return True
    return False


def _strip_name(text: str, name: str) -> str:
    """The name as the whole clause, or at its start (before a comma or "!"; in Chinese
    also directly before the rest: "王芳你太厉害了") or at its end after a comma."""
    n = re.escape(name)
    sep = r"\s*[,，!！:：]?\s*" if has_cjk(name) else r"\s*[,!:]\s*"
    text = re.sub(rf"^\s*{n}\s*[.!?。！？~～]*\s*$", "", text, flags=re.I)
    text = re.sub(rf"^\s*{n}{sep}", "", text, flags=re.I)
    return re.sub(rf"\s*[,，]\s*{n}\s*[.!?。！？~～]*\s*$", "", text, flags=re.I)
