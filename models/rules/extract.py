"""The rules extractor: readable turns → clauses → kept facts, each with its source turn.

Per turn: the subject is its speaker (``speakers``), relative dates resolve against the
day the turn was said (its ``ts``, else ``today``). The content clauses of a turn that
gave no rule fact become one EPISODIC memory (``episode``) beside the turn's facts, so
the no-LLM mode loses nothing said (docs/architecture.md#what-is-remembered): a turn with no
rule fact at all is kept whole as its episode.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import date

from memstream.schemas.enums import MemType, Ownership
from memstream.schemas.events import Message
from memstream.schemas.facts import Fact
from models.lang import has_cjk, normalize
from models.prompts.extract_facts import readable_roles
from models.rules.clauses import MAX_CLAUSE, split_clauses
from models.rules.content import clause_carries_content
from models.rules.dates_en import resolve_en
from models.rules.dates_zh import resolve_zh
from models.rules.episode import episode_of
from models.rules.filters import is_fact_clause
from models.rules.rewrite import rewrite_en, rewrite_zh
from models.rules.speakers import Voice, conversation_names, message_day, voices

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
        day, voice = message_day(message, today), who[index]
        new: list[Fact] = []
        unsaid: list[str] = []  # content clauses no rule fact came from
        for clause in split_clauses(message.content, max_len=None):
            fact = None
            if len(clause) <= MAX_CLAUSE:
                fact = clause_fact(clause, voice, day, index, message.msg_id, names)
            if fact is not None:
                if _fresh(fact, seen):
                    new.append(fact)
            elif clause_carries_content(clause, names):
                unsaid.append(clause)
        # What the rules did not turn into a fact is kept as an episode beside the facts
        # ("Finally started Past Lives, I'm hooked": the fact is only "Priya is hooked").
        episode = episode_of(unsaid, message.content, voice, day, index, message.msg_id)
        if episode is not None and _fresh(episode, seen):
            new.append(episode)
        facts.extend(new)
    return facts


def _fresh(fact: Fact, seen: set[str]) -> bool:
    """True the first time a text is met in this call (then remembered)."""
    key = normalize(fact.text)
    if key in seen:
        return False
    seen.add(key)
    return True


def clause_fact(
    clause: str,
    voice: Voice,
    day: date,
    index: int,
    msg_id: str | None,
    names: Collection[str] = (),
) -> Fact | None:
    """One clause → a self-contained fact, or None when it is not a fact about the speaker.

    ``day`` is the day the clause was said: relative dates resolve against it. A fact
    must also carry content by the one definition of ``content`` ("I miss you, Tomás"
    does not), so the rules and the episode fallback never disagree on chit-chat.
    """
    zh = has_cjk(clause)
    if not is_fact_clause(clause, zh) or not clause_carries_content(clause, names):
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
