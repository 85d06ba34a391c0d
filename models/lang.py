"""Tiny language helpers shared by the prompts and the rules provider."""

from __future__ import annotations

import functools
import re
from datetime import UTC, date, datetime

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACES = re.compile(r"\s+")


def has_cjk(text: str) -> bool:
    """True when the text holds Chinese characters (the rules pick their Chinese path)."""
    return _CJK.search(text) is not None


def dominant_language(texts: list[str]) -> str:
    """'zh' when most letters are CJK, else 'en'; a hint for the prompt, not a detector."""
    joined = "".join(texts)
    cjk = len(_CJK.findall(joined))
    latin = sum(1 for ch in joined if ch.isascii() and ch.isalpha())
    return "zh" if cjk and cjk >= latin / 4 else "en"


@functools.lru_cache(maxsize=1 << 14)  # evolution compares each offered memory's text again
def normalize(text: str) -> str:
    """Trim, lowercase, collapse spaces: the form content hashes are computed on (§7)."""
    return _SPACES.sub(" ", text.strip().lower())


def utc_date(ts: datetime) -> date:
    """The UTC calendar day of a timestamp (a naive one counts as UTC): the day a turn
    was said, which its relative dates resolve against."""
    return (ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)).date()
