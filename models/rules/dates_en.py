"""English relative dates → absolute ones ("next week" on 2026-03-02 → "in the week of
2026-03-09"), so a memory read months later still says when."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from models.rules.dates import (
    EN_NUMBER_RE,
    MONTHS_EN,
    WEEKDAYS_EN,
    DateHint,
    en_number,
    pick_year,
    safe_date,
    shift,
    weekday_date,
)

_PAST = re.compile(
    r"\b(?:was|were|did|went|had|got|made|met|saw|came|ate|left|bought|took|ago|"
    r"yesterday|last|\w+ed)\b",
    re.IGNORECASE,
)
_MONTH_ABBR = "|".join(
    f"{m[:3]}(?:{m[3:]})?" if len(m) > 3 else m for m in (x.lower() for x in MONTHS_EN)
)
_WD = "|".join(WEEKDAYS_EN)
_PREP = r"(?:(?P<prep>in|during|over|for|by|within|until|before|after)\s+)?(?:the\s+)?"
_PARTS = "morning|afternoon|evening|night"
_DAY_WORDS = {
    "the day after tomorrow": 2,
    "the day before yesterday": -2,
    "tomorrow": 1,
    "today": 0,
    "yesterday": -1,
}
_WHICH = {"next": 1, "coming": 1, "this": 0, "last": -1}

_RECURRING = re.compile(r"\b(?:birthday|anniversary|every|each|annual|yearly)\b", re.I)


@dataclass
class _Clause:
    today: date
    past: bool  # the clause speaks of the past: bare weekdays and month-days look back
    recurring: bool  # "my birthday is March 5": a yearly date, not a one-off event
    hint: DateHint


Handler = Callable[[re.Match[str], _Clause], str]


_PREP_BEFORE = re.compile(
    r"\b(?:from|to|until|till|by|since|before|after|through|between|and|or|of|at|for|"
    r"starting|ending|from)\s+$",
    re.I,
)


def _on(m: re.Match[str]) -> str:
    """ "on " unless the speaker's own preposition precedes ("from June 3 to June 10")."""
    if m[0].lower().startswith("on "):
        return "on "
    return "" if _PREP_BEFORE.search(m.string, 0, m.start()) else "on "


def _iso(d: date) -> str:
    return d.isoformat()


def _month_name(d: date) -> str:
    return f"{MONTHS_EN[d.month - 1]} {d.year}"


def _period_text(start: date, unit: str) -> str:
    if unit == "day":
        return f"on {_iso(start)}"
    if unit == "week":
        return f"the week of {_iso(start)}"
    if unit == "month":
        return f"in {_month_name(start)}"
    return f"in {start.year}"


def _with_prep(m: re.Match[str], text: str) -> str:
    """Keep the speaker's preposition ("by next week" → "by the week of ...")."""
    prep = m.groupdict().get("prep")
    if not prep:
        return "in " + text if text.startswith("the week of") else text
    return f"{prep} {text.removeprefix('in ').removeprefix('on ')}"


def _month_day(m: re.Match[str], c: _Clause) -> str:
    month = next(
        i for i, name in enumerate(MONTHS_EN, 1) if name.lower().startswith(m["mon"].lower()[:3])
    )
    day = int(m["day"])
    if m["year"]:
        d = safe_date(int(m["year"]), month, day)
    elif c.recurring:
        return m[0]  # a yearly date keeps no year and never expires
    else:
        d = pick_year(c.today, month, day, c.past)
    if d is None:
        return m[0]
    c.hint.note(d, c.today)
    return f"{_on(m)}{_iso(d)}"


def _day_word(m: re.Match[str], c: _Clause) -> str:
    d = c.today + timedelta(days=_DAY_WORDS[m["word"].lower()])
    c.hint.note(d, c.today)
    part = m["part"]
    return f"{_on(m)}the {part.lower()} of {_iso(d)}" if part else f"{_on(m)}{_iso(d)}"


def _night(m: re.Match[str], c: _Clause) -> str:
    d = c.today - timedelta(days=1) if m[0].lower().startswith("last") else c.today
    c.hint.note(d, c.today)
    return f"on the night of {_iso(d)}"


def _this_part(m: re.Match[str], c: _Clause) -> str:
    c.hint.note(c.today, c.today)
    return f"on the {m['part'].lower()} of {_iso(c.today)}"


def _relative(m: re.Match[str], c: _Clause) -> str:
    offset, unit = _WHICH[m["which"].lower()], m["unit"].lower()
    if unit == "weekend":
        start, _ = shift(c.today, offset, "week")
        sat = start + timedelta(days=5)
        c.hint.note(sat + timedelta(days=1), c.today)
        return _with_prep(m, f"on the weekend of {_iso(sat)}")
    start, end = shift(c.today, offset, unit)
    c.hint.note(end, c.today)
    return _with_prep(m, _period_text(start, unit))


def _count(m: re.Match[str], c: _Clause) -> str:
    n = en_number(m["n"]) * (-1 if m["ago"] else 1)
    start, end = shift(c.today, n, m["unit"].lower())
    c.hint.note(end, c.today)
    text = _period_text(start, m["unit"].lower())
    return "in " + text if text.startswith("the week of") else text


def _weekday(m: re.Match[str], c: _Clause) -> str:
    wd = WEEKDAYS_EN.index(m["wd"].lower())
    which = (m["which"] or "").lower()
    which = "next" if which == "next" else which if which in ("this", "last") else ""
    d = weekday_date(c.today, wd, which, c.past)
    c.hint.note(d, c.today)
    return f"{_on(m)}{m['wd'].capitalize()}, {_iso(d)}"


_RULES: list[tuple[re.Pattern[str], Handler]] = [
    (
        re.compile(
            rf"\b(?:on\s+)?(?P<mon>{_MONTH_ABBR})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?"
            rf"(?:,?\s+(?P<year>\d{{4}}))?\b(?!:)",
            re.I,
        ),
        _month_day,
    ),
    (
        re.compile(
            rf"\b(?:on\s+)?(?P<word>the day after tomorrow|the day before yesterday|"
            rf"tomorrow|today|yesterday)(?:\s+(?P<part>{_PARTS}))?\b",
            re.I,
        ),
        _day_word,
    ),
    (re.compile(r"\b(?:tonight|last night)\b", re.I), _night),
    (re.compile(rf"\bthis (?P<part>{_PARTS})\b", re.I), _this_part),
    (
        re.compile(
            rf"\b{_PREP}(?P<which>next|coming|this|last)\s+(?P<unit>week|weekend|month|year)\b",
            re.I,
        ),
        _relative,
    ),
    (
        re.compile(
            rf"\b(?:in\s+|after\s+)(?P<n>{EN_NUMBER_RE})\s+(?P<unit>day|week|month|year)s?"
            rf"(?P<ago>)\b(?!\s+ago)",
            re.I,
        ),
        _count,
    ),
    (
        re.compile(
            rf"\b(?P<n>{EN_NUMBER_RE})\s+(?P<unit>day|week|month|year)s?\s+(?P<ago>ago)\b", re.I
        ),
        _count,
    ),
    (
        re.compile(
            rf"\b(?:on\s+)?(?:(?P<which>next|this|last|coming)\s+)?(?P<wd>{_WD})\b(?!s)", re.I
        ),
        _weekday,
    ),
]


def resolve_en(text: str, today: date) -> tuple[str, DateHint]:
    """Rewrite relative dates in one English clause; say whether it is future or past."""
    hint = DateHint()
    clause = _Clause(today, _PAST.search(text) is not None, bool(_RECURRING.search(text)), hint)
    for d in re.findall(r"\b(\d{4})-(\d{2})-(\d{2})\b", text):
        found = safe_date(int(d[0]), int(d[1]), int(d[2]))
        if found:
            hint.note(found, today)
    for pattern, handler in _RULES:

        def repl(m: re.Match[str], h: Handler = handler) -> str:
            return h(m, clause)

        text = pattern.sub(repl, text)
    return text, hint
