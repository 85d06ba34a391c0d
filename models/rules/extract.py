"""The rules extractor: readable turns → clauses → kept facts, each with its source turn."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from models.lang import has_cjk, normalize
from models.prompts.extract_facts import readable_roles
from models.rules.clauses import split_clauses
from models.rules.dates_en import resolve_en
from models.rules.dates_zh import resolve_zh
from models.rules.filters import is_fact_clause
from models.rules.rewrite import rewrite_en, rewrite_zh
from models.types import Fact
from schemas.enums import MemType, Ownership, Role
from schemas.events import Message

# (subject en, subject zh, the other party en, zh): who "I" and "you" are in a turn.
_SUBJECTS = {
    Role.USER: ("User", "用户", "the assistant", "助手"),
    Role.ASSISTANT: ("Assistant", "助手", "the user", "用户"),
}
_PROCEDURAL_EN = re.compile(
    r"\b(?:always|usually|every (?:day|morning|evening|night|week|weekday)|whenever|"
    r"routine|habit|workflow|step by step|never)\b",
    re.I,
)
_PROCEDURAL_ZH = re.compile(r"总是|通常|每天|每周|每次|习惯|步骤|流程|一般|从不")


def extract_rules(
    messages: Sequence[Message], ownership: Ownership | None, today: date
) -> list[Fact]:
    """Deterministic facts from the turns the ownership variant may read (never system)."""
    roles = readable_roles(ownership)
    facts: list[Fact] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message.role not in roles:
            continue
        for clause in split_clauses(message.content):
            fact = clause_fact(clause, message.role, today, index, message.msg_id)
            if fact is not None and normalize(fact.text) not in seen:
                seen.add(normalize(fact.text))
                facts.append(fact)
    return facts


def clause_fact(
    clause: str, role: Role, today: date, index: int, msg_id: str | None
) -> Fact | None:
    """One clause → a self-contained fact, or None when it is not a fact about the speaker."""
    zh = has_cjk(clause)
    if not is_fact_clause(clause, zh):
        return None
    resolved, hint = (resolve_zh if zh else resolve_en)(clause, today)
    me_en, me_zh, you_en, you_zh = _SUBJECTS[role]
    text = rewrite_zh(resolved, me_zh, you_zh) if zh else rewrite_en(resolved, me_en, you_en)
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
