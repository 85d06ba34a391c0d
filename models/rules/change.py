"""What a statement says is no longer true: the no-LLM mode's one kind of supersession.

The rules cannot tell that "Aisha drives a Tesla" contradicts "Aisha drives a Subaru"
(that needs understanding). They can read a sentence that *names* what ended: "Sold a
Subaru Outback, we got a Tesla instead", "we moved from Berlin to Copenhagen", "I quit
badminton", "I left Zalando", "把比亚迪汉卖了", "我们刚从上海搬到杭州", "不玩网球了",
"我从腾讯离职了". :func:`ended` returns those named values ("Subaru Outback", "Berlin",
"上海"); evolution (``models.llm.rules``) supersedes the earlier memories of the same
subject that state one of them, so a "now" question finds the new value and not the old
one (docs/architecture.md#dedup-and-evolution: a contradicted memory is SUPERSEDED, never
erased; its change row keeps both texts).

Deliberately narrow: an ended value must be named literally, the old memory must carry
it as a whole word (Latin) or substring (CJK), and belong to the same subject
(:func:`subject_of`). Pure, no I/O.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_STOP = r"(?=\s*(?:[,.;:!?，。；！？、]|$|\b(?:to|for|and|but|because|after|since|so|we|i)\b))"
_DET = r"(?:(?:my|a|an|the|our|his|her|their|that|this|old)\s+)?"
_EN = re.compile(
    r"\b(?:sold|quit|left|ditched|dropped|gave\s+up|stopped|switched\s+from|moved\s+"
    r"(?:away\s+)?from|moved\s+out\s+of|no\s+longer\s+(?:at|in|with|play|plays|drive|"
    r"drives|work\s+at|works\s+at|live\s+in|lives\s+in))\s+"
    + _DET
    + r"(?P<old>[^,.;:!?]{2,40}?)"
    + _STOP,
    re.I,
)
_ZH_SPAN = r"(?P<old>[^，,。.！!？?；;、从把了在]{1,12}?)"
_ZH = tuple(
    re.compile(p)
    for p in (
        r"把(?:我的|我们的|那辆|这辆|旧的)?" + _ZH_SPAN + r"卖(?:了|掉)",
        r"卖(?:了|掉)(?:我的|我们的|那辆|这辆|旧的)?" + _ZH_SPAN + r"(?=[，,。.！!；;]|$)",
        r"从" + _ZH_SPAN + r"(?:搬到|搬去|搬走|离职|辞职|跳槽)",
        r"离开(?:了)?" + _ZH_SPAN + r"(?=了|[，,。.！!；;]|$)",
        r"不(?:再)?(?:玩|打|踢|开|住在|住|在)" + _ZH_SPAN + r"了",
        r"(?:退出|放弃|戒)(?:了)?" + _ZH_SPAN + r"(?=[，,。.！!；;]|$)",
    )
)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_DATED = re.compile(r"^(?P<who>.+?)(?: said on \d{4}-\d{2}-\d{2}:|在\d{4}-\d{2}-\d{2}说：)")
_CJK_SUBJECT = 2  # a Chinese name or 用户: compared on its first two characters


# Ended "values" that are no thing at all ("she left early", "I quit yesterday").
_VAGUE = frozenset(
    """early late home work school now again today yesterday tonight already it that this
    them him her there here soon before""".split()
)


# Evolution asks for a new fact's ended values once per similar memory it is offered, and
# for an old memory's whenever it is offered again: the scan of ~10 patterns was 12 % of
# RealMem's write step before this cache.
@functools.lru_cache(maxsize=1 << 14)
def ended(text: str) -> tuple[str, ...]:
    """The values ``text`` says ended, casefolded and NFKC-normalized, in order."""
    text = unicodedata.normalize("NFKC", text)
    found = [m.group("old").strip() for m in _EN.finditer(text)]
    for pattern in _ZH:
        found.extend(m.group("old").strip() for m in pattern.finditer(text))
    out: list[str] = []
    for value in found:
        low = value.casefold()
        if low and low not in out and low not in _VAGUE:
            out.append(low)
    return tuple(out)


def subject_of(text: str) -> str:
    """Who a rules memory is about: its speaker prefix ("Aisha said on …"), else its first
    word, casefolded and without a possessive ("Aisha's sister …" → "aisha"); a Chinese
    subject by its first two characters (a name or 用户)."""
    text = unicodedata.normalize("NFKC", text).strip()
    m = _DATED.match(text)
    who = m.group("who") if m else text
    if _HAN.match(who):
        return who[:_CJK_SUBJECT]
    first = who.split(maxsplit=1)[0] if who.strip() else ""
    return re.sub(r"['’]s$", "", first).casefold()


def states(text: str, value: str) -> bool:
    """True when ``text`` carries ``value`` (a word sequence in Latin, a substring in CJK)
    other than as something it says ended itself."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    if value in ended(text):
        return False
    if _HAN.search(value):
        return value in norm
    return re.search(r"(?<![\w])" + re.escape(value) + r"(?![\w])", norm) is not None


def superseded_by(new_text: str, old_text: str) -> bool:
    """True when ``new_text`` names as ended a value that ``old_text``, about the same
    subject, states."""
    values = ended(new_text)
    if not values or subject_of(new_text) != subject_of(old_text):
        return False
    return any(states(old_text, v) for v in values)
