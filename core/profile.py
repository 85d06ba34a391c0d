"""The profile (User Summary): who the user is and what matters now, planned by rules
from the user's current memories (docs/architecture.md#the-profile).

Pure: records, a character budget and the clock in; items out. The route reads the
records of the scope the caller may see (``recall_api.routes.profile``); this module
decides what of them to say, in what words and in what order:

- **only what is true now**: ACTIVE, not invalidated (superseded), not past
  ``expire_at``; a deleted or superseded memory is never cited;
- **telling first**: a lasting fact (SEMANTIC, PROCEDURAL) over a one-off event
  (EPISODIC; a time-bound one, ``expire_at`` set, least), important and heavier ones
  first, a fact said again (several source turns) over one said once, and what the user
  said lately over what they said long before their latest memories (recency counts
  from the user's newest memory, not from the clock: a quiet user keeps a profile);
- **compressed**: markup and spacing tidied; memories that say the same thing, or the
  same frame with other values, become one item as consolidation merges them
  (:func:`core.compression.merged_text`); memories that share a leading frame ("Anna
  likes …", "Anna likes …") are said once with their endings listed;
- **spread**: each source turn is paid for once (a memory whose turns are all cited
  already adds little), near-duplicate wording and a third item about one entity lose
  value, so the budget is not spent on ten tellings of one thing;
- **whole, in reading order**: items are chosen greedily by value per character and
  kept only when they fit ``max_chars`` whole, then read in the order chosen.

Each item cites exactly the memories whose content it states and their source turns.
Deterministic: ties go by memory id.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from core.clustering import candidates
from core.compression import merged_text
from core.lexical import tokenize
from schemas.enums import MemType, Status
from schemas.memory import MemoryRecord

TYPE_VALUE = {MemType.SEMANTIC: 1.0, MemType.PROCEDURAL: 0.9, MemType.EPISODIC: 0.55}
TIME_BOUND = 0.5  # a memory with its own end date (expire_at): a one-off event
IMPORTANT = 1.5
HALF_LIFE_DAYS = 30.0  # recency: a memory this much older than the user's newest halves
ITEM_OVERHEAD = 60  # characters an item costs to read besides its text (value per char)
COMMON_SHARE = 0.2  # a word in more of the user's memories says nothing of one
MIN_WORDS = 4  # content words a memory needs to say something at full value
SIMILAR = 0.6  # token overlap (Jaccard) from which an item repeats a chosen one
PER_ENTITY = 2  # items about one entity at full value; each further one at half
MERGE_MAX_CHARS = 320  # a merged item's text, at most
FRAME_MIN_WORDS = 3  # words a shared leading frame needs to be said once

_MARKUP = re.compile(r"^[\s>*\-•#]+|[*_`]{2,}|^\d+[.)]\s+")
_SPACES = re.compile(r"\s+")
_TRAILING = " \t\n.;,。；，"


@dataclass(frozen=True, slots=True)
class ProfileItem:
    """One statement of the profile and exactly what it stands on."""

    text: str
    memory_ids: tuple[str, ...]
    msg_ids: tuple[str, ...]
    entity: str | None = None  # the entity it is about, when it is about one


@dataclass(slots=True)
class _Unit:
    """A candidate item: one memory, or memories said as one."""

    text: str
    members: list[MemoryRecord]
    value: float

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return tuple(m.memory_id for m in self.members)

    @property
    def msg_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(mid for m in self.members for mid in m.msg_ids))


def current(rec: MemoryRecord, now: datetime) -> bool:
    """Is this memory true now: ACTIVE, never invalidated, not past its end date?"""
    return (
        rec.status is Status.ACTIVE
        and rec.invalid_at is None
        and (rec.expire_at is None or rec.expire_at > now)
        and bool(rec.content.strip())
    )


def tidy(text: str) -> str:
    """The memory's words without list markup, emphasis or runs of spaces."""
    text = unicodedata.normalize("NFKC", text)
    text = _MARKUP.sub("", text)
    text = text.replace("**", "").replace("__", "")
    return _SPACES.sub(" ", text).strip().rstrip(_TRAILING)


def telling(rec: MemoryRecord, newest: datetime, common: frozenset[str] = frozenset()) -> float:
    """How much this memory says about the user, before spreading (module docstring).
    ``common``: words most of the user's memories hold (their name, "user"), which say
    nothing about one of them."""
    value = TYPE_VALUE.get(rec.mem_type, 0.5) * max(rec.weight, 0.05)
    if rec.expire_at is not None:
        value *= TIME_BOUND
    if rec.is_important:
        value *= IMPORTANT
    value *= 1.0 + 0.25 * math.log(len(rec.msg_ids) or 1)
    value *= min(1.0, len(set(tokenize(rec.content)) - common) / MIN_WORDS)
    age = max((newest - rec.valid_at).total_seconds() / 86400.0, 0.0)
    return value * math.exp(-math.log(2) * age / HALF_LIFE_DAYS)


def plan_profile(
    records: Sequence[MemoryRecord], max_chars: int, *, now: datetime
) -> list[ProfileItem]:
    """The profile of ``records`` (one user's memories of one scope) within ``max_chars``."""
    live = sorted((r for r in records if current(r, now)), key=lambda r: r.memory_id)
    if not live or max_chars <= 0:
        return []
    newest, common = max(r.valid_at for r in live), _common_words(live)
    units = [_Unit(tidy(r.content), [r], telling(r, newest, common)) for r in live]
    units = _frames(_merged(units))
    return [_item(u) for u in _choose(units, max_chars)]


# ---------------------------------------------------------------------------- internals
def _common_words(records: Sequence[MemoryRecord]) -> frozenset[str]:
    """Words in more than COMMON_SHARE of the memories (at least 3 of them)."""
    counts: dict[str, int] = {}
    for r in records:
        for w in set(tokenize(r.content)):
            counts[w] = counts.get(w, 0) + 1
    floor = max(3, COMMON_SHARE * len(records))
    return frozenset(w for w, n in counts.items() if n > floor)


def _merged(units: list[_Unit]) -> list[_Unit]:
    """Same fact or same frame with other values: one unit (core.compression)."""
    texts = [u.text for u in units]
    taken: set[int] = set()
    out: list[_Unit] = []
    for group in sorted(candidates(texts), key=lambda g: (-len(g), g)):
        free = [i for i in group if i not in taken and units[i].text]
        if len(free) < 2:
            continue
        free.sort(key=lambda i: (units[i].members[0].valid_at, units[i].members[0].memory_id))
        made = merged_text([units[i].text for i in free], MERGE_MAX_CHARS)
        if made is None:
            continue
        taken.update(free)
        members = [m for i in free for m in units[i].members]
        out.append(_Unit(made[0], members, _group_value([units[i].value for i in free])))
    return out + [u for i, u in enumerate(units) if i not in taken and u.text]


def _frames(units: list[_Unit]) -> list[_Unit]:
    """Units sharing a leading frame of words ("Anna said on 2025-01-02:") said once:
    the frame, then each one's ending, joined with "; "."""
    by_frame: dict[str, list[_Unit]] = {}
    for u in units:
        frame = _frame(u.text)
        if frame:
            by_frame.setdefault(frame.casefold(), []).append(u)
    out: list[_Unit] = []
    grouped: set[int] = set()
    for _, group in sorted(by_frame.items()):
        if len(group) < 2:
            continue
        group.sort(key=lambda u: (u.members[0].valid_at, u.memory_ids))
        frame = _frame(group[0].text) or ""
        rests = [u.text[len(frame) :].strip(" :,;").rstrip(_TRAILING) for u in group]
        text = frame.rstrip() + " " + "; ".join(r for r in rests if r)
        if len(text) > MERGE_MAX_CHARS:
            continue  # said one by one instead
        grouped.update(id(u) for u in group)
        members = [m for u in group for m in u.members]
        out.append(_Unit(text, members, _group_value([u.value for u in group])))
    return out + [u for u in units if id(u) not in grouped]


def _frame(text: str) -> str | None:
    """The leading frame of ``text``: its words up to a colon that ends a lead of at
    least FRAME_MIN_WORDS words ("Anna said on 2025-01-02:"), else None."""
    head, colon, rest = text.partition(":")
    if not colon or not rest.strip() or len(head) > 60 or len(head.split()) < FRAME_MIN_WORDS:
        return None
    return head + colon


def _group_value(values: Sequence[float]) -> float:
    """A unit of several: its best member, plus a share of the others."""
    best = max(values)
    return best + 0.5 * (sum(values) - best)


def _choose(units: list[_Unit], max_chars: int) -> list[_Unit]:
    """Greedy by value per character, spread (module docstring), fitting whole."""
    pool = sorted(units, key=lambda u: u.memory_ids)
    chosen: list[_Unit] = []
    cited: set[str] = set()
    entities: dict[str, int] = {}
    words: list[frozenset[str]] = []
    used = 0
    while pool:
        best, best_score = -1, 0.0
        for n, u in enumerate(pool):
            if used + len(u.text) > max_chars:
                continue
            score = _spread(u, cited, entities, words) / (len(u.text) + ITEM_OVERHEAD)
            if score > best_score:
                best, best_score = n, score
        if best < 0:
            break
        u = pool.pop(best)
        chosen.append(u)
        used += len(u.text)
        cited.update(u.msg_ids)
        words.append(frozenset(tokenize(u.text)))
        ent = _entity(u)
        if ent:
            entities[ent] = entities.get(ent, 0) + 1
    return chosen


def _spread(
    u: _Unit, cited: set[str], entities: dict[str, int], words: list[frozenset[str]]
) -> float:
    """The unit's value given what is chosen already."""
    msg = u.msg_ids
    new = sum(1 for m in msg if m not in cited) / len(msg) if msg else 1.0
    value = u.value * (0.15 + 0.85 * new)
    mine = frozenset(tokenize(u.text))
    if mine and any(len(mine & w) / len(mine | w) >= SIMILAR for w in words):
        value *= 0.2
    ent = _entity(u)
    if ent and entities.get(ent, 0) >= PER_ENTITY:
        value *= 0.5 ** (entities[ent] - PER_ENTITY + 1)
    return value


def _entity(u: _Unit) -> str | None:
    """The entity every member names (its id), when there is one."""
    common: set[str] | None = None
    for m in u.members:
        ids = {e["entity_id"] for e in m.entities}
        common = ids if common is None else common & ids
    return min(common) if common else None


def _entity_name(u: _Unit, entity_id: str) -> str:
    for m in u.members:
        for e in m.entities:
            if e["entity_id"] == entity_id:
                return e["name"]
    return entity_id


def _item(u: _Unit) -> ProfileItem:
    ent = _entity(u)
    return ProfileItem(u.text, u.memory_ids, u.msg_ids, _entity_name(u, ent) if ent else None)
