"""The rules extractor: readable turns → clauses → kept facts, each with its source turn.

Per turn: the subject is its speaker (``speakers``), relative dates resolve against the
day the turn was said (its ``ts``, else ``today``). A turn whose clauses give no rule
fact but that carries content becomes one EPISODIC memory of the turn (``episode``),
so the no-LLM mode loses nothing said (DESIGN §7).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from models.lang import has_cjk, normalize
from models.prompts.extract_facts import readable_roles
from models.rules.clauses import split_clauses
from models.rules.dates_en import resolve_en
from models.rules.dates_zh import resolve_zh
from models.rules.episode import episode_fact
from models.rules.filters import is_fact_clause
from models.rules.rewrite import rewrite_en, rewrite_zh
from models.rules.speakers import Voice, conversation_names, message_day, voices
from models.types import Fact
from schemas.enums import MemType, Ownership
from schemas.events import Message

_PROCEDURAL_EN = re.compile(
    r"\b(?:always|usually|every (?:day|morning|evening|night|week|weekday)|whenever|"
    r"routine|habit|workflow|step by step|never)\b",
    re.I,
)
_PROCEDURAL_ZH = re.compile(r"总是|通常|每天|每周|每次|习惯|步骤|流程|一般|从不")


def extract_rules(
    messages: Sequence[Message], ownership: Ownership | None, today: date
) -> list[Fact]:
    """Deterministic facts from the turns the ownership variant may read (never system).

    ``today`` is the day a turn without its own ``ts`` was said (the caller passes the
    conversation's date, else the clock's).
    """
    roles = readable_roles(ownership)
    who = voices(messages)
    names = conversation_names(messages)
    facts: list[Fact] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message.role not in roles:
            continue
        day = message_day(message, today)
        found = [
            fact
            for clause in split_clauses(message.content)
            if (fact := clause_fact(clause, who[index], day, index, message.msg_id)) is not None
        ]
        if not found:
            episode = episode_fact(message.content, who[index], day, index, message.msg_id, names)
            found = [episode] if episode is not None else []
        for fact in found:
            if normalize(fact.text) not in seen:
                seen.add(normalize(fact.text))
                facts.append(fact)
    return facts


def clause_fact(
    clause: str, voice: Voice, day: date, index: int, msg_id: str | None
) -> Fact | None:
    """One clause → a self-contained fact, or None when it is not a fact about the speaker.

    ``day`` is the day the clause was said: relative dates resolve against it.
    """
    zh = has_cjk(clause)
    if not is_fact_clause(clause, zh):
        return None
    resolved, hint = (resolve_zh if zh else resolve_en)(clause, day)
    if zh:
        text = rewrite_zh(resolved, voice.me_zh, voice.you_zh)
    else:
        text = rewrite_en(resolved, voice.me_en, voice.you_en)
    if not text:
        return None
    if hint.future_end is not None or hint.past:
        mem_type = MemType.EPISODIC
    elif (_PROCEDURAL_ZH if zh else _PROCEDURAL_EN).search(clause):
        mem_type = MemType.PROCEDURAL
    else:
        mem_type = MemType.SEMANTIC
    return Fact(
        text=text,
        msg_index=index,
        msg_id=msg_id,
        mem_type=mem_type,
        time_bound=hint.future_end is not None,
        expire_at=hint.future_end,
    )
