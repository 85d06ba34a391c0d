"""Seeded multi-session chats with evidence-labelled questions for ``bench quality``.

Pure Python, no download: ``generate(users, sessions, seed, lang)`` gives every user
(the memory owner) a friend, and
``sessions`` dated chats of 20–30 turns spread over months. Facts come in the ways
people say them — first person, about a relative, reactions, plans with relative dates,
a fact that later changes — between genuine chit-chat, and every turn is labelled
content or chit-chat (the ground truth for "share of content turns kept"). Questions
name their evidence ``msg_id``s and a type (``TYPES``). With ``lang="both"`` users
alternate English and Chinese. A user's data depends only on (seed, index, sessions),
never on how many users are generated.

Entity questions (issue 44: "What activities does Ana do?", evidence spread over several
sessions about one relative of the owner) came after the other types, so they are added
on top without moving anything: their own random stream (``rng`` of the user's seed plus
":entity"), their turns inserted as pairs just before a session's goodbyes with ids of
their own (``…-e00``) and times between the turns around them, their questions numbered
after the others. Every other turn and question is the same as before, id for id.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ops.bench.quality import en as quality_en
from ops.bench.quality import zh as quality_zh
from ops.bench.quality.kinds import (
    Bank,
    Entity,
    base_slots,
    draw,
    dress,
    is_dated,
    render,
    speaker_slots,
)

TYPES = ("single", "multi", "temporal", "changed", "deleted", "paraphrase", "entity")
BANKS: dict[str, Bank] = {"en": quality_en.BANK, "zh": quality_zh.BANK}
LANGS = {"en": ("en",), "zh": ("zh",), "both": ("en", "zh")}
OWNER, FRIEND = "owner", "friend"  # the two speakers of every chat
# Both are people: in the events both speak with role ``user`` and are told apart by
# ``name`` (the OpenAI convention for several humans in one chat).
ROLE = "user"
FIRST_USER_ID = 7_000_000


@dataclass(frozen=True)
class Turn:
    msg_id: str
    speaker: str  # OWNER or FRIEND
    name: str
    ts: datetime
    content: str
    is_content: bool  # carries information (False: chit-chat)


@dataclass(frozen=True)
class Question:
    qid: str
    user_id: int
    lang: str
    type: str
    query: str
    evidence: tuple[str, ...]  # changed: the latest statement; deleted: the deleted turn
    stale: tuple[str, ...] = ()  # changed: the statements it replaced


@dataclass
class UserData:
    user_id: int
    lang: str
    owner: str
    friend: str
    sessions: list[list[Turn]]
    questions: list[Question]

    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s]

    def events(self, app_id: str | None) -> Iterator[dict[str, Any]]:
        """One ``memory.conversations`` event per session (docs/architecture.md#kafka-topics)."""
        for i, turns in enumerate(self.sessions):
            yield {
                "task_id": f"quality-{self.user_id}-s{i:02d}",
                "user_id": self.user_id,
                "app_id": app_id,
                "session_id": f"s{i:02d}",
                "ts": turns[-1].ts.isoformat(),
                "messages": [
                    {"role": ROLE, "name": t.name, "content": t.content,
                     "msg_id": t.msg_id, "ts": t.ts.isoformat()}
                    for t in turns
                ],
            }  # fmt: skip


@dataclass
class Dataset:
    seed: int
    lang: str
    users: list[UserData]

    def turns(self) -> list[Turn]:
        return [t for u in self.users for t in u.turns()]

    def questions(self) -> list[Question]:
        return [q for u in self.users for q in u.questions]


@dataclass
class _Item:
    speaker: str
    text: str
    asks: dict[str, str] = field(default_factory=dict)  # type -> question, if picked
    msg_id: str = ""


def generate(users: int, sessions: int, seed: int = 7, lang: str = "both") -> Dataset:
    langs = LANGS[lang]
    out = []
    for i in range(users):
        rng = random.Random(f"quality:{seed}:{i}")
        people = random.Random(f"quality:{seed}:{i}:entity")
        bank = BANKS[langs[i % len(langs)]]
        out.append(_user(rng, people, FIRST_USER_ID + i, bank, sessions))
    return Dataset(seed, lang, out)


def _user(rng: random.Random, people: random.Random, uid: int, bank: Bank, n: int) -> UserData:
    who = dict(zip((OWNER, FRIEND), rng.choice(bank.pairs), strict=True))
    names = list(bank.relatives)
    rng.shuffle(names)
    base = base_slots(rng, bank)
    slots = {s: {**base, **speaker_slots(rng, bank, names)} for s in (OWNER, FRIEND)}
    plan: list[list[_Item]] = [[] for _ in range(n)]
    asks: list[tuple[str, str, list[_Item], list[_Item]]] = []  # type, query, ev, stale

    def say(speaker: str, template: str, values: dict[str, str], session: int) -> _Item:
        item = _Item(speaker, dress(rng, bank, render(bank, template, values)))
        plan[session].append(item)
        return item

    if n >= 2:
        for ch in rng.sample(bank.changes, min(len(bank.changes), max(1, n // 5))):
            steps = 3 if n >= 8 and rng.random() < 0.5 else 2
            values = rng.sample(ch.values, steps)
            chain = []
            for j, s in enumerate(sorted(rng.sample(range(n), steps))):
                template = rng.choice(ch.then if j else ch.first)
                chain.append(say(OWNER, template, {"v": values[j], "old": values[j - 1]}, s))
            asks.append(("changed", ch.ask.format(who=who[OWNER]), chain[-1:], chain[:-1]))
        for sr in rng.sample(bank.series, min(len(bank.series), max(1, n // 2))):
            filled = {"who": who[OWNER]}
            draw(rng, slots[OWNER], filled)
            filled.update(zip(sr.key.split("|"), rng.choice(sr.values).split("|"), strict=True))
            a, b = sorted(rng.sample(range(n), 2))
            story = [say(OWNER, rng.choice(sr.first), filled, a)]
            story.append(say(OWNER, rng.choice(sr.then), filled, b))
            asks.append(("multi", render(bank, sr.ask, filled), story, []))
    for statement, query in rng.sample(bank.paraphrase, min(len(bank.paraphrase), n // 2 + 2)):
        item = _Item(OWNER, statement)  # as said: no filler, so no word is shared by chance
        plan[rng.randrange(n)].append(item)
        asks.append(("paraphrase", query, [item], []))
    facts = _singles(rng, bank, plan, slots, who)
    _pick(rng, facts, n, asks)
    start = datetime(2023, 1, 2, tzinfo=UTC) + timedelta(days=rng.randint(0, 90))
    sessions = []
    for i, items in enumerate(plan):
        start += timedelta(days=rng.randint(3, 12))
        at = start.replace(hour=rng.randint(8, 21), minute=rng.randint(0, 59))
        sessions.append(_session(rng, bank, who, items, at, f"u{uid}-s{i:02d}"))
    if bank.entity is not None:
        family = list(slots[OWNER]["rel|rname"])
        asks += _entities(people, bank, bank.entity, who, family, sessions, f"u{uid}")
    questions = [
        Question(f"{uid}-q{k:03d}", uid, bank.lang, kind, query,
                 tuple(i.msg_id for i in ev), tuple(i.msg_id for i in stale))
        for k, (kind, query, ev, stale) in enumerate(asks)
    ]  # fmt: skip
    return UserData(uid, bank.lang, who[OWNER], who[FRIEND], sessions, questions)


def _singles(
    rng: random.Random, bank: Bank, plan: list[list[_Item]], slots: dict, who: dict[str, str]
) -> list[_Item]:
    """Fill every session up to 11–15 facts, a quarter of them told by the friend; one
    fact per (speaker, kind, value), so a user has as many facts as the bank holds."""
    pools = {}
    for speaker in (OWNER, FRIEND):
        pool = []
        for kind in bank.kinds:
            pool += [(kind, v) for v in rng.sample(kind.values, min(kind.most, len(kind.values)))]
        rng.shuffle(pool)
        pools[speaker] = pool
    made = []
    for items in plan:
        for _ in range(rng.randint(11, 15) - len(items)):
            speaker = FRIEND if rng.random() < 0.25 else OWNER
            if not pools[speaker]:
                speaker = OWNER if speaker == FRIEND else FRIEND
            if not pools[speaker]:
                break  # the bank ran dry: later sessions carry fewer facts
            kind, value = pools[speaker].pop()
            template = rng.choice(kind.say)
            values = {"who": who[speaker]}
            draw(rng, {**slots[speaker], **kind.slots}, values)
            values.update(zip(kind.key.split("|"), value.split("|"), strict=True))
            item = _Item(speaker, dress(rng, bank, render(bank, template, values)))
            if kind.ask:
                item.asks["single"] = render(bank, kind.ask, values)
            if kind.when_ask and is_dated(template):
                item.asks["temporal"] = render(bank, kind.when_ask, values)
            items.append(item)
            made.append(item)
    return made


def _pick(rng: random.Random, facts: list[_Item], n: int, asks: list) -> None:
    """Deleted first (a quarter of the sessions, at least one), then temporal, single."""
    want = {"deleted": max(1, n // 4), "temporal": min(15, n), "single": min(30, 2 * n)}
    for item in rng.sample(facts, len(facts)):
        for kind, source in (("deleted", "single"), ("temporal", "temporal"), ("single", "single")):
            if source in item.asks and want[kind] > 0:
                want[kind] -= 1
                asks.append((kind, item.asks[source], [item], []))
                break


def _session(
    rng: random.Random, bank: Bank, who: dict[str, str], items: list[_Item], at: datetime,
    prefix: str,
) -> list[Turn]:  # fmt: skip
    """Alternating turns, owner first: greetings, the facts in random order with
    reactions, questions and filler between them, goodbyes."""
    rng.shuffle(items)
    queues = {s: [i for i in items if i.speaker == s] for s in (OWNER, FRIEND)}
    other = {OWNER: FRIEND, FRIEND: OWNER}
    target = rng.randint(20, 30)
    lines: list[tuple[str, str, _Item | None]] = []  # speaker, text, the fact it states

    def chit(kind: str, speaker: str) -> None:
        lines.append((speaker, rng.choice(bank.chit[kind]).format(other=who[other[speaker]]), None))

    chit("greet", OWNER)
    chit(rng.choice(("greet", "ask")), FRIEND)
    while queues[OWNER] or queues[FRIEND] or len(lines) < target - 2:
        speaker = OWNER if len(lines) % 2 == 0 else FRIEND
        room = target - 2 - len(lines) - 2 * max(len(q) for q in queues.values())
        if queues[speaker] and (room <= 0 or rng.random() < 0.7):
            item = queues[speaker].pop(0)
            lines.append((speaker, item.text, item))
        elif lines[-1][2] and rng.random() < 0.7:
            chit("react", speaker)
        elif lines[-2][2] and lines[-2][0] == speaker and rng.random() < 0.3:
            chit("thanks", speaker)  # after the friend's reaction to what this one said
        else:
            chit(rng.choice(("ask", "filler", "filler")), speaker)
    for _ in range(2):
        chit("bye", OWNER if len(lines) % 2 == 0 else FRIEND)
    turns = []
    for k, (speaker, text, said) in enumerate(lines):
        at += timedelta(seconds=rng.randint(15, 150))
        turns.append(Turn(f"{prefix}-t{k:02d}", speaker, who[speaker], at, text, said is not None))
        if said is not None:
            said.msg_id = turns[-1].msg_id
    return turns


def _entities(
    rng: random.Random, bank: Bank, spec: Entity, who: dict[str, str], family: list[str],
    sessions: list[list[Turn]], prefix: str,
) -> list[tuple[str, str, list[_Item], list[_Item]]]:  # fmt: skip
    """The owner tells about one relative (two for 12 sessions, three for 18…), one thing
    they do per session in three sessions (two when there are two), and an entity
    question asks for all of it. ``rng`` is the entity stream alone (module docstring)."""
    n = len(sessions)
    relations = [f.split("|")[0] for f in family]
    acts = rng.sample(spec.acts, len(spec.acts))
    placed: dict[int, list[_Item]] = {}
    asks: list[tuple[str, str, list[_Item], list[_Item]]] = []
    for person in rng.sample(family, min(len(family), max(1, n // 6))):
        rel, rname = person.split("|")
        k = 3 if n >= 3 else 2
        where = sorted(rng.sample(range(n), k) if n >= k else rng.choices(range(n), k=k))
        told: list[_Item] = []
        for j, s in enumerate(where):
            values = {"rel": rel, "rname": rname, "act": acts.pop()}
            if j == 0:
                template = rng.choice(spec.intro)
            elif relations.count(rel) == 1 and rng.random() < 0.4:
                template = rng.choice(spec.alone)
            else:
                template = rng.choice(spec.say)
            told.append(_Item(OWNER, dress(rng, bank, render(bank, template, values))))
            placed.setdefault(s, []).append(told[-1])
        asks.append(("entity", rng.choice(spec.ask).format(rname=rname), told, []))
    for s, items in sorted(placed.items()):
        sessions[s] = _insert(rng, bank, who, sessions[s], items, f"{prefix}-s{s:02d}")
    return asks


def _insert(
    rng: random.Random, bank: Bank, who: dict[str, str], turns: list[Turn], items: list[_Item],
    prefix: str,
) -> list[Turn]:  # fmt: skip
    """``turns`` with each item said just before the two goodbyes, as a pair that keeps the
    speakers alternating: the owner says it and the friend reacts, or (the friend's turn)
    the friend asks what's new and the owner says it. The new turns take ids of their own
    and times between the last turn before them and the first goodbye."""
    at = len(turns) - 2
    lines: list[tuple[str, str, _Item | None]] = []
    for item in items:
        first = OWNER if (at + len(lines)) % 2 == 0 else FRIEND
        chit = "react" if first == OWNER else "ask"
        fact: tuple[str, str, _Item | None] = (OWNER, item.text, item)
        reply: tuple[str, str, _Item | None] = (
            FRIEND, rng.choice(bank.chit[chit]).format(other=who[OWNER]), None)  # fmt: skip
        lines += [fact, reply] if first == OWNER else [reply, fact]
    before, after = turns[at - 1].ts, turns[at].ts
    step = (after - before) / (len(lines) + 1)
    new = []
    for k, (speaker, text, said) in enumerate(lines):
        ts = before + step * (k + 1)
        new.append(Turn(f"{prefix}-e{k:02d}", speaker, who[speaker], ts, text, said is not None))
        if said is not None:
            said.msg_id = new[-1].msg_id
    return turns[:at] + new + turns[at:]
