"""The no-LLM fallback: a turn with content but no rule fact is kept as one episode.

The rules only turn first-person statements into facts; "That pottery class last night
was amazing!" or "公司下个月要搬到杭州" would otherwise leave nothing. The episode keeps
the turn's content clauses that gave no rule fact (those
``content.clause_carries_content`` accepts), with relative dates resolved against the
day it was said and "I"/"you" replaced by the speakers, under a prefix that says who
said it and when — an episode's date is what answers "when did…":

    Priya said on 2023-05-08: That pottery class on the night of 2023-05-07 was amazing
    王芳在2023-05-08说：公司2023年6月要搬到杭州
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from memstream.schemas.enums import MemType
from memstream.schemas.facts import Fact
from models.lang import dominant_language, has_cjk
from models.rules.dates import DateHint
from models.rules.dates_en import resolve_en
from models.rules.dates_zh import resolve_zh
from models.rules.rewrite import rewrite_en, rewrite_zh
from models.rules.speakers import Voice

MAX_EPISODE = 500  # characters of the whole memory text


def episode_of(
    clauses: Sequence[str],
    text: str,
    voice: Voice,
    day: date,
    index: int,
    msg_id: str | None,
) -> Fact | None:
    """The episode of a turn (whole ``text``) from its content ``clauses``; None if none."""
    if not clauses:
        return None
    hint = DateHint()
    parts: list[str] = []
    for clause in clauses:
        zh = has_cjk(clause)
        resolved, h = (resolve_zh if zh else resolve_en)(clause, day)
        _merge(hint, h)
        said = (
            rewrite_zh(resolved, voice.me_zh, voice.you_zh)
            if zh
            else rewrite_en(resolved, voice.me_en, voice.you_en)
        )
        if said:
            parts.append(said + ("。" if zh else ". "))
    body = "".join(parts).rstrip(" 。.")
    if not body:
        return None
    if dominant_language([text]) == "zh":
        prefix = f"{voice.me_zh}在{day.isoformat()}说："
    else:
        prefix = f"{voice.me_en} said on {day.isoformat()}: "
    return Fact(
        text=prefix + bounded(body, MAX_EPISODE - len(prefix)),
        msg_index=index,
        msg_id=msg_id,
        mem_type=MemType.EPISODIC,
        time_bound=hint.future_end is not None,
        expire_at=hint.future_end,
    )


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary (an ellipsis marks the cut)."""
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 1)]
    space = cut.rfind(" ")
    if space > limit // 2 and not has_cjk(cut[space:]):
        cut = cut[:space]
    return cut.rstrip(" ,，.。") + "…"


def _merge(into: DateHint, other: DateHint) -> None:
    if other.future_end is not None:
        end = other.future_end
        into.future_end = end if into.future_end is None else max(into.future_end, end)
    into.past = into.past or other.past
