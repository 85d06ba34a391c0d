"""First person → a named subject, so a stored fact reads on its own months later.

"my name is John" → "User's name is John"; "I'm moving to Shanghai" → "User is moving
to Shanghai"; "我是一名医生" → "用户是一名医生". The first reference becomes the subject
(the speaker's name, else "User"/"Assistant", "用户"/"助手": see ``speakers``); later
ones become they/their/them. The English verb
after the subject is put into the third person (I have → User has, I don't → User
doesn't), past forms and modals stay as they are; adverbs in between are skipped
("I once visited" → "User once visited", never "User onces visited").
"""

from __future__ import annotations

import re

_CONTRACTIONS = [
    (re.compile(r"\bI'm\b"), "I am"),
    (re.compile(r"\bI've\b"), "I have"),
    (re.compile(r"\bI'll\b"), "I will"),
    (re.compile(r"\bI'd\b"), "I would"),
    (re.compile(r"\bi\b(?=\s|'|$)"), "I"),
]
# Not inside URLs or e-mail addresses ("example.com/i/my", "me@example.com").
_PRONOUN = re.compile(r"(?<![/@.])\b(?:I|[Mm]y|[Mm]e|[Mm]ine|[Mm]yself)\b(?!')(?![/@]|\.\w)")
_AND_BEFORE = re.compile(r"\band\s+$", re.I)
_TOKEN = re.compile(r"\s*([A-Za-z']+)")
# Words between "I" and its verb that are not the verb: "I once visited", "I really
# like", "I kind of miss". Any other -ly word counts too ("I eventually moved"), except
# the few verbs that end in -ly ("I apply", "I reply").
_ADVERBS = frozenset(
    """also really just usually always never often sometimes still actually mostly rarely
    seldom definitely generally totally absolutely already recently currently now only even
    truly certainly probably normally typically occasionally frequently finally honestly
    once twice thrice first ever soon later then barely hardly almost nearly again maybe
    perhaps too much pretty kinda sorta mainly simply suddenly quickly slowly gradually
    eventually originally initially personally seriously literally basically constantly
    regularly""".split()
)
_ADVERB_PHRASES = re.compile(r"\s*(?:kind of|sort of|no longer|at first|at last|at least)\b", re.I)
_LY_VERBS = frozenset(
    "apply reply supply rely imply comply multiply ally rally tally bully sully dally fly".split()
)
_KEEP = frozenset(
    """can could will would shall should may might must was had did ought used can't
    couldn't won't wouldn't shouldn't mustn't wasn't hadn't didn't went got made saw met
    bought took came ate left lost won began said told thought felt knew found gave kept
    ran wrote sold sent spent built broke drove flew grew heard held hurt paid put quit
    rode sang sat slept spoke stood swam taught understood woke wore became brought caught
    chose drank fell fought forgot hid let meant set shut stuck threw""".split()
)
_THIRD = {
    "am": "is",
    "are": "is",
    "have": "has",
    "do": "does",
    "go": "goes",
    "don't": "doesn't",
    "haven't": "hasn't",
    "aren't": "isn't",
    "be": "is",
}
_PLURAL = {"am": "are", "was": "were", "wasn't": "weren't"}
_YOUR = re.compile(r"\b[Yy]our(?:s)?\b")
_YOU = re.compile(r"\b[Yy]ou\b(?!')")
_LATER = {"i": "they", "my": "their", "me": "them", "mine": "theirs", "myself": "themselves"}


def third_person(verb: str) -> str:
    """play → plays, watch → watches, study → studies; past forms and modals unchanged."""
    low = verb.lower()
    if low in _THIRD:
        return _THIRD[low]
    if low in _KEEP or low.endswith("ed") or not low.isalpha():
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def is_adverb(word: str) -> bool:
    """True for a word that can sit between "I" and its verb without being the verb."""
    low = word.lower()
    return low in _ADVERBS or (len(low) > 4 and low.endswith("ly") and low not in _LY_VERBS)


def _conjugate_after(text: str, pos: int, plural: bool) -> str:
    """Conjugate the verb that follows position ``pos`` (skipping adverbs)."""
    cursor = pos
    while True:
        phrase = _ADVERB_PHRASES.match(text, cursor)
        if phrase:
            cursor = phrase.end()
            continue
        m = _TOKEN.match(text, cursor)
        if not m:
            return text
        word = m.group(1)
        if is_adverb(word):
            cursor = m.end()
            continue
        new = _PLURAL.get(word.lower(), word) if plural else third_person(word)
        return text[: m.start(1)] + new + text[m.end(1) :]


def rewrite_en(clause: str, subject: str, other: str | None = None) -> str:
    """Replace the speaker's first person by ``subject`` (and "you" by ``other``, the
    other party, e.g. "the user" in an assistant's turn), fixing the verbs that follow."""
    for pattern, repl in _CONTRACTIONS:
        clause = pattern.sub(repl, clause)
    if other:
        clause = _YOUR.sub(lambda _: f"{other}'s", clause)
        clause = _YOU.sub(lambda _: other, clause)
    first = True
    out = clause
    offset = 0
    for m in list(_PRONOUN.finditer(clause)):
        word = m.group(0).lower()
        compound = False
        if first:
            new = {
                "i": subject,
                "my": f"{subject}'s",
                "mine": f"{subject}'s",
                "me": subject,
                "myself": subject,
            }[word]
        elif word == "i" and _AND_BEFORE.search(clause, 0, m.start()):
            new, compound = subject, True  # "my wife and I are": the verb already agrees
        else:
            new = _LATER[word]
        start, end = m.start() + offset, m.end() + offset
        out = out[:start] + new + out[end:]
        offset += len(new) - (end - start)
        if word == "i" and not compound:
            before = len(out)
            out = _conjugate_after(out, start + len(new), plural=not first)
            offset += len(out) - before
        first = False
    out = out.strip().rstrip(".;,!")
    return out[:1].upper() + out[1:]


def rewrite_zh(clause: str, subject: str, other: str | None = None) -> str:
    """我 → 用户 (or 助手), 你/您 → the other party; 我们 is left alone (not the speaker
    alone)."""
    if other:
        clause = re.sub(r"你(?!们)|您", lambda _: other, clause)
    out = re.sub(r"我(?!们)", lambda _: subject, clause)
    return out.strip().rstrip("。；;，,！!")
