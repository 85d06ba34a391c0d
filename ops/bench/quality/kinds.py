"""The shapes a language bank of ``bench quality`` fills in (``ops.bench.quality.en``,
``ops.bench.quality.zh``), and how one fact is rendered from them. Pure: no I/O, all
randomness from the caller's ``random.Random``.

A template is a ``str.format`` string. Slot names joined by ``|`` draw one value for
several slots at once ("book|author" from "Dune|Frank Herbert"), so values that belong
together stay together. Every fact has a speaker; ``{who}`` in a question is that
speaker's name. ``{when_f}`` / ``{when_p}`` are relative dates (future / past): a
template holding one makes the fact *dated*, so it may get a temporal question.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

DATED = ("{when_f}", "{when_p}")


@dataclass(frozen=True)
class Kind:
    """A kind of fact a person states once per value of ``key`` (a book, a trip...)."""

    name: str
    key: str  # slot names of the values, e.g. "book|author"
    values: tuple[str, ...]
    say: tuple[str, ...]  # first person, third person, reactions, plans
    ask: str = ""  # single-fact question; "" = content only, never asked
    when_ask: str = ""  # temporal question, for a fact rendered with a relative date
    slots: dict[str, tuple[str, ...]] = field(default_factory=dict)  # drawn per fact
    most: int = 99  # at most this many facts of the kind per speaker


@dataclass(frozen=True)
class Series:
    """A story told in two sessions; the multi-session question needs both turns."""

    name: str
    key: str
    values: tuple[str, ...]
    first: tuple[str, ...]
    then: tuple[str, ...]
    ask: str
    slots: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
    """A fact that later changes (moving city): ``{v}`` the new value, ``{old}`` the
    previous one; the question asks for the current value."""

    name: str
    values: tuple[str, ...]
    first: tuple[str, ...]
    then: tuple[str, ...]
    ask: str


@dataclass(frozen=True)
class Entity:
    """A person in the owner's life, told about in several sessions, one thing they do
    at a time; the question asks for all of it (a multi-hop question about one person,
    issue 44). ``{rel}``/``{rname}`` the relative, ``{act}`` one thing they do: the first
    statement names both (``intro``), a later one the name (``say``) or, when the owner
    has one relative of that relation, the relation only (``alone``: "my sister …"), so
    only knowing who the sister is links that turn to the name the question asks for."""

    acts: tuple[str, ...]
    intro: tuple[str, ...]
    say: tuple[str, ...]
    alone: tuple[str, ...]
    ask: tuple[str, ...]  # "{rname}" only: "What activities does Ana do?"


@dataclass(frozen=True)
class Bank:
    """Everything one language needs: speakers, chit-chat, facts, questions."""

    lang: str
    pairs: tuple[tuple[str, str], ...]  # (memory owner, friend) display names
    chit: dict[str, tuple[str, ...]]  # greet, react, ask, filler, thanks, bye
    relatives: tuple[str, ...]  # "sister|Ana": role and name, four drawn per speaker
    pets: tuple[str, ...]  # "puppy|Mochi"
    future: tuple[str, ...]  # relative dates ahead: "next Friday", "下周五"
    past: tuple[str, ...]  # relative dates behind: "yesterday", "上周三"
    days: tuple[str, ...]
    kinds: tuple[Kind, ...]
    series: tuple[Series, ...]
    changes: tuple[Change, ...]
    paraphrase: tuple[tuple[str, str], ...]  # (statement, question sharing no word)
    prefixes: tuple[str, ...] = ()  # filler a person puts before a fact
    suffixes: tuple[str, ...] = ()
    capitalize: bool = False
    entity: Entity | None = None  # None: this bank asks no entity question


def draw(rng: random.Random, slots: dict[str, tuple[str, ...]], into: dict[str, str]) -> None:
    """One value per slot spec, split over its ``|``-joined names."""
    for spec, values in slots.items():
        into.update(zip(spec.split("|"), rng.choice(values).split("|"), strict=True))


def speaker_slots(rng: random.Random, bank: Bank, relatives: list[str]) -> dict[str, tuple]:
    """The slots that belong to one speaker: four relatives (taken from ``relatives``,
    so two speakers never share one) and a pet."""
    family = tuple(relatives.pop() for _ in range(4))
    return {"rel|rname": family, "pet|pname": (rng.choice(bank.pets),)}


def render(bank: Bank, template: str, values: dict[str, str]) -> str:
    text = template.format_map(values)
    if bank.capitalize:
        text = text[0].upper() + text[1:]
    return text


def dress(rng: random.Random, bank: Bank, text: str) -> str:
    """What people add around a fact in chat: "Guess what! …", "… lol", "对了，…"."""
    if bank.prefixes and rng.random() < 0.2:
        text = rng.choice(bank.prefixes) + text
    if bank.suffixes and rng.random() < 0.15:
        text = text + rng.choice(bank.suffixes)
    return text


def base_slots(rng: random.Random, bank: Bank) -> dict[str, tuple[str, ...]]:
    """Slots every template may use: relative dates, weekdays, prices."""
    prices = tuple(str(rng.randrange(20, 900, 5)) for _ in range(12))
    return {"when_f": bank.future, "when_p": bank.past, "day": bank.days, "price": prices}


def is_dated(template: str) -> bool:
    return any(slot in template for slot in DATED)
