"""Shared pieces of relative-date resolution: periods, calendar arithmetic, numerals.

Each resolved phrase is a period [start, end]. A period that ends today or later makes
the fact time-bound (a plan or appointment) and gives its expiry hint; one that ended
before today marks a past event (episodic, no expiry).
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, timedelta

WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS_EN = tuple(calendar.month_name)[1:]
_CN_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
}
EN_NUMBER_RE = (
    r"(?:a couple of|a few|\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
)


@dataclass
class DateHint:
    """What the dates of one clause say: latest future end, or that it lies in the past."""

    future_end: date | None = None
    past: bool = False

    def note(self, end: date, today: date) -> None:
        """Record a resolved period by its last day."""
        if end >= today:
            self.future_end = end if self.future_end is None else max(self.future_end, end)
        else:
            self.past = True


def monday_of(d: date) -> date:
    return d - timedelta(days=d.weekday())


def month_start(d: date, offset: int) -> date:
    years, month0 = divmod(d.month - 1 + offset, 12)
    return date(d.year + years, month0 + 1, 1)


def month_end(first: date) -> date:
    return month_start(first, 1) - timedelta(days=1)


def shift(today: date, n: int, unit: str) -> tuple[date, date]:
    """The period n units from today (negative: ago): a day, a Mon-Sun week, a month, a year."""
    if unit == "day":
        d = today + timedelta(days=n)
        return d, d
    if unit == "week":
        mon = monday_of(today + timedelta(weeks=n))
        return mon, mon + timedelta(days=6)
    if unit == "month":
        first = month_start(today, n)
        return first, month_end(first)
    year = today.year + n
    return date(year, 1, 1), date(year, 12, 31)


def weekday_date(today: date, weekday: int, which: str, past_tense: bool) -> date:
    """next = in next week; this = in this week; last = most recent before today;
    bare = the coming one (the last one when the clause speaks of the past)."""
    if which == "next":
        return monday_of(today) + timedelta(days=7 + weekday)
    if which == "this":
        return monday_of(today) + timedelta(days=weekday)
    ahead = (weekday - today.weekday()) % 7 or 7
    if which == "last" or past_tense:
        return today + timedelta(days=ahead - 7)
    return today + timedelta(days=ahead)


def en_number(word: str) -> int:
    w = " ".join(word.lower().split())
    return int(w) if w.isdigit() else _EN_NUMBERS[w]


def cn_number(text: str) -> int:
    """Arabic or Chinese numerals up to 99 (三, 十五, 二十一, 两)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_CN_DIGITS.get(tens, 1) if tens else 1) * 10 + (_CN_DIGITS.get(ones, 0))
    return _CN_DIGITS[text]


def safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def pick_year(today: date, month: int, day: int, past_tense: bool) -> date | None:
    """A month-day without a year: this year, moved a year to agree with the tense."""
    d = safe_date(today.year, month, day)
    if d is None:
        return None
    if past_tense and d > today:
        return safe_date(today.year - 1, month, day)
    if not past_tense and d < today:
        return safe_date(today.year + 1, month, day)
    return d
