"""Chinese relative dates → absolute ones ("下周" on 2026-03-02 → "在2026-03-09那一周"),
so a memory read months later still says when."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from models.rules.dates import DateHint, cn_number, pick_year, safe_date, shift, weekday_date

_NUM = r"[0-9]+|[零一二两三四五六七八九十]+"
_WD = {
    "一": 0,
    "二": 1,
    "三": 2,
    "四": 3,
    "五": 4,
    "六": 5,
    "日": 6,
    "天": 6,
    "1": 0,
    "2": 1,
    "3": 2,
    "4": 3,
    "5": 4,
    "6": 5,
    "7": 6,
}
_WHICH = {"下": 1, "这": 0, "本": 0, "今": 0, "上": -1}
_DAYS = {
    "大后天": 3,
    "后天": 2,
    "明天": 1,
    "明日": 1,
    "明早": 1,
    "明晚": 1,
    "今天": 0,
    "今日": 0,
    "今早": 0,
    "今晚": 0,
    "昨天": -1,
    "昨日": -1,
    "昨晚": -1,
    "前天": -2,
    "大前天": -3,
}
_YEARS = {"后年": 2, "明年": 1, "今年": 0, "去年": -1, "前年": -2}
_UNIT = {
    "天": "day",
    "日": "day",
    "周": "week",
    "星期": "week",
    "礼拜": "week",
    "月": "month",
    "年": "year",
}
_RECURRING = re.compile(r"生日|纪念日|每年|每月|每周|每天")
_NO_ZAI = "在于从到自至截"  # these already introduce a time: don't add another 在


@dataclass
class _Clause:
    today: date
    recurring: bool
    hint: DateHint


Handler = Callable[[re.Match[str], _Clause, str], str]


def _zai(before: str, text: str) -> str:
    return text if before[-1:] in _NO_ZAI else "在" + text


def _week_text(monday: date, before: str) -> str:
    return _zai(before, f"{monday.isoformat()}那一周")


def _month_text(first: date) -> str:
    return f"{first.year}年{first.month}月"


def _day(m: re.Match[str], c: _Clause, before: str) -> str:
    word = m["word"]
    d = c.today + timedelta(days=_DAYS[word])
    c.hint.note(d, c.today)
    part = "早上" if word.endswith("早") else "晚上" if word.endswith("晚") else ""
    return d.isoformat() + part


def _week(m: re.Match[str], c: _Clause, before: str) -> str:
    offset = _WHICH[m["which"]]
    monday, end = shift(c.today, offset, "week")
    if m["wd"]:
        which = {1: "next", 0: "this", -1: "this"}[offset]
        d = weekday_date(c.today, _WD[m["wd"]], which, False)
        d = d - timedelta(days=7) if offset == -1 else d
        c.hint.note(d, c.today)
        return d.isoformat()
    if m["weekend"]:
        sat = monday + timedelta(days=5)
        c.hint.note(sat + timedelta(days=1), c.today)
        return _zai(before, f"{sat.isoformat()}那个周末")
    c.hint.note(end, c.today)
    return _week_text(monday, before)


def _bare_weekday(m: re.Match[str], c: _Clause, before: str) -> str:
    if c.recurring:
        return m[0]
    d = weekday_date(c.today, _WD[m["wd"]], "", False)
    c.hint.note(d, c.today)
    return d.isoformat()


def _month(m: re.Match[str], c: _Clause, before: str) -> str:
    first, end = shift(c.today, _WHICH[m["which"]], "month")
    c.hint.note(end, c.today)
    return _month_text(first)


def _year(m: re.Match[str], c: _Clause, before: str) -> str:
    _, end = shift(c.today, _YEARS[m[0]], "year")
    c.hint.note(end, c.today)
    return f"{end.year}年"


def _count(m: re.Match[str], c: _Clause, before: str) -> str:
    unit = _UNIT[m["unit"]]
    sign = -1 if m["dir"] in ("前", "以前", "之前") else 1
    start, end = shift(c.today, sign * cn_number(m["n"]), unit)
    c.hint.note(end, c.today)
    if unit == "day":
        return start.isoformat()
    if unit == "week":
        return _week_text(start, before)
    return _month_text(start) if unit == "month" else f"{start.year}年"


def _month_day(m: re.Match[str], c: _Clause, before: str) -> str:
    if c.recurring:
        return m[0]
    d = pick_year(c.today, cn_number(m["mon"]), cn_number(m["day"]), past_tense=False)
    if d is None:
        return m[0]
    c.hint.note(d, c.today)
    return d.isoformat()


_RULES: list[tuple[re.Pattern[str], Handler]] = [
    (re.compile(rf"(?<![年\d])(?P<mon>{_NUM})月(?P<day>{_NUM})[日号]"), _month_day),
    (re.compile("(?P<word>" + "|".join(sorted(_DAYS, key=len, reverse=True)) + ")"), _day),
    (
        re.compile(
            r"(?P<which>[下这本上])个?(?:周|星期|礼拜)(?:(?P<weekend>末)|"
            r"(?P<wd>[一二三四五六日天1-7]))?"
        ),
        _week,
    ),
    (re.compile(r"(?<![下这本上每个])(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"), _bare_weekday),
    (re.compile(r"(?P<which>[下这本上])个?月"), _month),
    (re.compile("|".join(_YEARS)), _year),
    (
        re.compile(
            rf"(?P<n>{_NUM})个?(?P<unit>天|日|周|星期|礼拜|月|年)"
            r"(?P<dir>以后|之后|后|以前|之前|前)"
        ),
        _count,
    ),
]


def resolve_zh(text: str, today: date) -> tuple[str, DateHint]:
    """Rewrite relative dates in one Chinese clause; say whether it is future or past."""
    clause = _Clause(today, bool(_RECURRING.search(text)), DateHint())
    for found in re.findall(r"(\d{4})[-年](\d{1,2})[-月](\d{1,2})", text):
        d = safe_date(int(found[0]), int(found[1]), int(found[2]))
        if d is not None:
            clause.hint.note(d, today)
    for pattern, handler in _RULES:

        def repl(m: re.Match[str], h: Handler = handler) -> str:
            return h(m, clause, m.string[: m.start()])

        text = pattern.sub(repl, text)
    return text, clause.hint
