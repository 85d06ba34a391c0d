"""Who "I" and "you" are in each turn, and which day a turn was said on.

A stored fact must read on its own months later and tell speakers apart: "Priya started
a pottery class" answers "when did Priya…", "User started…" does not. So the subject of
a turn is its speaker's ``name`` when the producer gave one (OpenAI chat convention),
else the role ("User"/"用户", "Assistant"/"助手"). "you" in a turn is the other party:
the nearest other named speaker of the conversation (earlier turns first on a tie: a
reply usually answers the turn before it), else the other role.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from memstream.schemas.enums import Role
from memstream.schemas.events import Message
from models.lang import utc_date


@dataclass(frozen=True)
class Voice:
    """The subject a turn's first person becomes, and who its "you" is, per language."""

    me_en: str
    me_zh: str
    you_en: str
    you_zh: str


# (subject en, subject zh, the other party en, zh) of an unnamed speaker of each role.
_DEFAULT = {
    Role.USER: Voice("User", "用户", "the assistant", "助手"),
    Role.ASSISTANT: Voice("Assistant", "助手", "the user", "用户"),
    Role.SYSTEM: Voice("System", "系统", "the user", "用户"),
}


def speaker_name(message: Message) -> str | None:
    """The display name, trimmed; None when absent or blank."""
    name = (message.name or "").strip()
    return name or None


def voices(messages: Sequence[Message]) -> list[Voice]:
    """One Voice per message, in order (system turns included, so indexes line up)."""
    named = [
        (i, n)
        for i, m in enumerate(messages)
        if m.role is not Role.SYSTEM and (n := speaker_name(m)) is not None
    ]
    out: list[Voice] = []
    for i, message in enumerate(messages):
        default = _DEFAULT[message.role]
        me = speaker_name(message)
        others = [(abs(j - i), j > i, n) for j, n in named if n != me]
        other = min(others)[2] if others else None
        out.append(
            Voice(
                me_en=me or default.me_en,
                me_zh=me or default.me_zh,
                you_en=other or default.you_en,
                you_zh=other or default.you_zh,
            )
        )
    return out


def conversation_names(messages: Sequence[Message]) -> tuple[str, ...]:
    """Every speaker name of the conversation, once each (to recognize vocatives)."""
    return tuple(dict.fromkeys(n for m in messages if (n := speaker_name(m)) is not None))


def message_day(message: Message, fallback: date) -> date:
    """The UTC date the turn was said (a naive ts counts as UTC), else ``fallback``."""
    return utc_date(message.ts) if message.ts is not None else fallback
