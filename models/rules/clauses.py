"""Cut a turn into candidate statements, and peel greetings off their front.

English: sentences end at . ! ? ; or a newline (not after "Dr." or "e.g."), and a
sentence splits again where a comma or "and/but/so" starts a new first-person clause
("Hi, my name is John, I am an engineer"). Chinese: 。！？；… and newlines end a
sentence, and a comma before a new 我-clause splits it ("我叫李雷，我是一名医生").
A question that opens with a statement gives the statement its own piece ("I just got
back from Lisbon, have you been?" → "I just got back from Lisbon" + "have you been?"),
so what was said is not lost with the question. The terminator stays on the piece, so
questions can still be recognized.
"""

from __future__ import annotations

import re

from models.lang import has_cjk
from models.rules.filters import is_question_or_request

_ABBREV = re.compile(
    r"(?:\b(?:mr|mrs|ms|dr|prof|st|jr|sr|vs|etc|e\.g|i\.e|approx|no)|(?<![A-Za-z])(?!I\.$)[A-Za-z]"
    r"(?:\.[A-Za-z])*)\.$",
    re.I,
)  # "Dr.", "e.g.", "U.S.": not the end of a sentence
_EN_END = re.compile(r"[.!?;]+(?=\s|$)|\n+")
_EN_FIRST = r"(?:I|I'm|I've|I'll|I'd|my|My)\b"
_EN_INNER = re.compile(rf"(?:,\s*|\s+)(?:and|but|so|because)\s+(?={_EN_FIRST})|,\s*(?={_EN_FIRST})")
_EN_SUBJECT_I = re.compile(r"\bI\b")
_ZH_END = re.compile(r"(?<=[。！？!?；;…])|\n+")
_ZH_INNER = re.compile(r"[，,、]\s*(?:但是|但|而且|并且|所以|然后|不过|另外|还有)?(?=我(?!们))")

# A greeting, with the name it greets ("Hi Tomás!"), but never the "I" that follows it.
_EN_GREETING = re.compile(
    r"^(?:(?:hi|hello|hey|hiya|howdy|greetings|yo|good (?:morning|afternoon|evening|night)|"
    r"thanks|thank you(?: so much| very much)?|nice to meet you)"
    r"(?:\s+there|\s+(?!I\b)(?-i:[^\W\d_a-z])[\w'-]*(?=\s*(?:[,!.:;-]|$)))?"
    r"(?:[\s,!.:;-]+|$))+",
    re.I,
)
_FILLER_WORDS = (
    r"(?:ok|okay|oh|ah|well|so|yes|yeah|yep|no|nope|sure|um|uh|hmm+|btw|by the way|fyi|"
    r"anyway|also|actually|alright|great|cool|nice|and|but|honestly|basically|just so you know|"
    r"(?:big |good |great |some )?news|guess what|update|fun fact|"
    r"wow|whoa|woah|omg|oh my (?:god|gosh)|oh man|aw+|yay|ooh|oops|ugh|gosh|geez|ha(?:ha)+h?|"
    r"he(?:he)+|lol|lmao|"
    r"for the record|(?:please )?(?:remember|note|keep in mind)(?: that)?)"
)
_EN_FILLER_PUNCT = re.compile(rf"^(?:{_FILLER_WORDS}\s*(?:[,!.:;-]+|$)\s*)+", re.I)
_EN_FILLER_LEAD = re.compile(rf"^(?:{_FILLER_WORDS}\s+)+(?={_EN_FIRST})", re.I)
_ZH_GREETING = re.compile(
    r"^(?:(?:你好|您好|大家好|嗨|哈喽|哈啰|早上好|上午好|中午好|下午好|晚上好|早安|晚安|"
    r"谢谢你?|多谢|好的|好吧|嗯+|哦+|噢|啊|对了|对|是的|没错|其实|另外|还有|然后|那个|呃|话说|"
    r"大消息|好消息|更新一下|告诉你个事|"
    r"请记住|记住|请记得|跟你说|告诉你|顺便说一下|顺便说|说实话|hi|hello|"
    r"[哈呵嘿嘻]{2,}|哇塞|哇哦|哎呀|天哪|天啊|(?:哈|哇|嘿|哎|哦)(?=[\s，,！!。.~～]))"
    r"[\s，,！!。.~～、:：]*)+",
    re.I,
)
_COMMA = re.compile(r"\s*[,，]\s*")
_QUESTION_END = re.compile(r"[?？]\s*$")
MAX_CLAUSE = 500  # longer than this is not one self-contained statement


def split_clauses(text: str, max_len: int | None = MAX_CLAUSE) -> list[str]:
    """Candidate statements of one turn, in order, stripped, greetings removed; pieces
    longer than ``max_len`` are left out (None keeps them all)."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").strip()
    out: list[str] = []
    for sentence in _sentences(text):
        for part in peel_question(sentence):
            zh = has_cjk(part)
            for piece in _ZH_INNER.split(part) if zh else _split_en_inner(part):
                piece = strip_greeting(piece.strip())
                if piece and (max_len is None or len(piece) <= max_len):
                    out.append(piece)
    return out


def peel_question(sentence: str) -> list[str]:
    """A question sentence whose first comma-parts are statements → [statement, question];
    any other sentence → [sentence]. The last part is the question itself ("right?",
    "have you been?"); leading parts count until one reads as a question."""
    if not _QUESTION_END.search(sentence):
        return [sentence]
    parts = _COMMA.split(sentence.strip())
    lead: list[str] = []
    for part in parts[:-1]:
        if is_question_or_request(part, has_cjk(part)):
            break
        lead.append(part)
    if not lead:
        return [sentence]
    joiner = "，" if has_cjk(sentence) else ", "
    return [joiner.join(lead), joiner.join(parts[len(lead) :])]


def strip_greeting(piece: str) -> str:
    """'Hi, my name is John.' → 'my name is John.'; '你好' → ''."""
    if has_cjk(piece):
        return _ZH_GREETING.sub("", piece).strip()
    before = None
    while before != piece:
        before = piece
        piece = _EN_GREETING.sub("", piece).strip()
        piece = _EN_FILLER_PUNCT.sub("", piece).strip()
        piece = _EN_FILLER_LEAD.sub("", piece).strip()
    return piece


def _split_en_inner(sentence: str) -> list[str]:
    """Split where a new first-person clause starts — but "My wife and I are" is one
    subject: a bare "and I" splits only when the left part already has its own "I"."""
    pieces: list[str] = []
    start = 0
    for m in _EN_INNER.finditer(sentence):
        left = sentence[start : m.start()]
        bare_and = not m.group().lstrip().startswith(",") and m.group().split()[0] == "and"
        if bare_and and not _EN_SUBJECT_I.search(left):
            continue
        pieces.append(left)
        start = m.end()
    pieces.append(sentence[start:])
    return pieces


def _sentences(text: str) -> list[str]:
    if has_cjk(text):
        # Chinese text may carry English sentences too: cut at both kinds of ends.
        parts = [p for chunk in _ZH_END.split(text) for p in _split_en(chunk)]
    else:
        parts = _split_en(text)
    return [p.strip() for p in parts if p and p.strip()]


def _split_en(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for m in _EN_END.finditer(text):
        candidate = text[start : m.end()]
        if m.group().startswith(".") and _ABBREV.search(text[start : m.start() + 1]):
            continue  # "Dr. Smith": not the end of a sentence
        pieces.append(candidate)
        start = m.end()
    pieces.append(text[start:])
    return pieces
