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
  from the user's newest memory, not from the clock: a quiet user keeps a profile),
  what they said first in a conversation (its opening names the topic) over what
  followed, and a memory with words of its own over one that says little besides the
  words most of the user's memories share (their name);
- **compressed**: markup and spacing tidied; memories that say the same thing, or the
  same frame with other values, become one item as consolidation merges them
  (:func:`core.compression.merged_text`); a memory whose leading frame ("Anna said on
  2025-01-02:") a chosen item already says joins that item with its ending only;
- **spread**: each source turn is paid for once (a memory whose turns are all cited
  already adds little), a conversation already cited, near-duplicate wording and a
  third item about one entity lose value (an entity most memories name, the user
  themself, spreads nothing), so the budget is not spent on ten tellings of one thing;
- **whole, in reading order**: items are chosen greedily by value per character and
  kept only when they fit ``max_chars`` whole, then read in the order chosen.

Each item cites exactly the memories whose content it states and their source turns.
Deterministic: ties go by memory id.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cachetools import LRUCache

from core.clustering import candidates
from core.compression import merged_text
from core.lexical import tokenize
from memstream.schemas.enums import MemType, Status
from memstream.schemas.memory import MemoryRecord

TYPE_VALUE = {MemType.SEMANTIC: 1.0, MemType.PROCEDURAL: 0.9, MemType.EPISODIC: 0.55}
TIME_BOUND = 0.5  # a memory with its own end date (expire_at): a one-off event
IMPORTANT = 1.5
HALF_LIFE_DAYS = 30.0  # recency: a memory this much older than the user's newest halves
ITEM_OVERHEAD = 60  # characters an item costs to read besides its text (value per char)
COMMON_SHARE = 0.2  # a word in more of the user's memories says nothing of one
MIN_WORDS = 4  # content words a memory needs to say something at full value
SIMILAR = 0.6  # token overlap (Jaccard) from which an item repeats a chosen one
PER_ENTITY = 2  # items about one entity at full value; each further one at half
OPENING = 1.5  # what the user said first in a conversation: its topic
SESSION_SEEN = 0.7  # a conversation already cited: its next item is worth this share
MERGE_MAX_CHARS = 320  # a merged item's text, at most
FRAME_MIN_WORDS = 3  # words a shared leading frame needs to be said once

_MARKUP = re.compile(r"^\s*(?:[>*\-•#]+\s+)+|\*{2,}|`{2,}|^\d+[.)]\s+")
_SPACES = re.compile(r"\s+")
_LEAD = re.compile(r"([^:]{1,60}):\s")
_TRAILING = " \t\n.;,。；，"


@dataclass(frozen=True, slots=True)
class ProfileItem:
    """One statement of the profile and exactly what it stands on."""

    text: str
    memory_ids: tuple[str, ...]
    msg_ids: tuple[str, ...]
    entity: str | None = None  # the entity it is about, when it is about one
    entity_id: str | None = None  # that entity's id


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
    value *= min(1.0, len(_words(rec.content) - common) / MIN_WORDS)
    age = max((newest - rec.valid_at).total_seconds() / 86400.0, 0.0)
    return value * math.exp(-math.log(2) * age / HALF_LIFE_DAYS)


def plan_profile(
    records: Sequence[MemoryRecord], max_chars: int, *, now: datetime
) -> list[ProfileItem]:
    """The profile of ``records`` (one user's memories of one scope) within ``max_chars``.

    A plan depends on the clock only through which memories are current, so it is
    remembered per (budget, the current memories as they are: id, version, words,
    weight, links) for the last ``PLANS_HELD`` asks: a user's profile, context and entity
    summaries are planned again only after one of their memories changed (planning 200
    memories costs ~10 ms; a user's next turns ask again at once, bench recall's context
    line). Any change to a memory changes its key, so a deleted or edited memory is never
    answered from an older plan."""
    live = sorted((r for r in records if current(r, now)), key=lambda r: r.memory_id)
    if not live or max_chars <= 0:
        return []
    key = (max_chars, tuple(_signature(r) for r in live))
    with _PLANS_LOCK:
        held = _PLANS.get(key)
    if held is not None:
        return list(held)
    items = _plan(live, max_chars)
    with _PLANS_LOCK:
        _PLANS[key] = tuple(items)
    return items


PLANS_HELD = 4096
_PLANS: LRUCache[tuple[object, ...], tuple[ProfileItem, ...]] = LRUCache(PLANS_HELD)
_PLANS_LOCK = threading.Lock()


def _signature(r: MemoryRecord) -> tuple[object, ...]:
    """What a memory's part in a plan depends on (any edit changes one of these)."""
    links = tuple((x["entity_id"], x["name"], x["type"]) for x in r.entities)
    return (r.memory_id, r.version, r.updated_at, r.content_hash, r.content, r.weight,
            r.mem_type, r.is_important, r.expire_at, r.valid_at, r.session_id,
            r.source_session_id, tuple(r.msg_ids), links)  # fmt: skip


def _plan(live: list[MemoryRecord], max_chars: int) -> list[ProfileItem]:
    """The plan of the current memories ``live`` (sorted by id)."""
    newest, common = max(r.valid_at for r in live), _common_words(live)
    opening = _openings(live)
    units = [
        _Unit(
            tidy(r.content),
            [r],
            telling(r, newest, common) * (OPENING if r.memory_id in opening else 1.0),
        )
        for r in live
    ]
    units = _merged(units)
    everyone = _common_entities(live)
    return [_item(u, everyone) for u in _choose(units, max_chars, everyone)]


# ---------------------------------------------------------------------------- internals
@functools.lru_cache(maxsize=16384)
def _words(text: str) -> frozenset[str]:
    """The text's content words (``core.lexical.tokenize``), remembered."""
    return frozenset(tokenize(text))


def _openings(records: Sequence[MemoryRecord]) -> set[str]:
    """The memories of what the user said first in each conversation (the earliest
    ``valid_at`` of a source session): an opening names what the session is about."""
    first: dict[str, datetime] = {}
    for r in records:
        if r.source_session_id:
            at = first.get(r.source_session_id)
            first[r.source_session_id] = r.valid_at if at is None else min(at, r.valid_at)
    return {
        r.memory_id
        for r in records
        if r.source_session_id and r.valid_at == first[r.source_session_id]
    }


def _common_entities(records: Sequence[MemoryRecord]) -> frozenset[str]:
    """Entities linked to more than COMMON_SHARE of the memories (at least 3): the user
    themself, whose name the extractor links everywhere; they spread nothing."""
    counts: dict[str, int] = {}
    for r in records:
        for eid in {e["entity_id"] for e in r.entities}:
            counts[eid] = counts.get(eid, 0) + 1
    floor = max(3, COMMON_SHARE * len(records))
    return frozenset(e for e, n in counts.items() if n > floor)


def _common_words(records: Sequence[MemoryRecord]) -> frozenset[str]:
    """Words in more than COMMON_SHARE of the memories (at least 3 of them)."""
    counts: dict[str, int] = {}
    for r in records:
        for w in _words(r.content):
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


def _frame(text: str) -> str | None:
    """The leading frame of ``text``: its words up to a colon that ends a lead of at
    least FRAME_MIN_WORDS words ("Anna said on 2025-01-02:"), else None. The colon
    ends a lead only when a space follows it: "wakes at 6:30" and a URL have none."""
    lead = _LEAD.match(text)
    if lead is None or not text[lead.end() :].strip():
        return None
    head = lead.group(1)
    return head + ":" if len(head.split()) >= FRAME_MIN_WORDS else None


def _group_value(values: Sequence[float]) -> float:
    """A unit of several: its best member, plus a share of the others."""
    best = max(values)
    return best + 0.5 * (sum(values) - best)


def _choose(units: list[_Unit], max_chars: int, everyone: frozenset[str]) -> list[_Unit]:
    """Greedy by value per character, spread (module docstring), fitting whole. A unit
    whose leading frame an item already says joins that item, costing only its ending.

    Lazily: a unit's value only falls as others are chosen and its cost is at least its
    cheapest (joined, when it has a frame), so value over cheapest cost bounds its score
    from above; each round prices units from the highest bound down until the best
    price found beats every bound left, instead of pricing the whole pool."""
    pool = sorted(units, key=lambda u: u.memory_ids)
    st = _State(pool, everyone)
    heap = [(-st.bound(n), n) for n in range(len(pool))]
    heapq.heapify(heap)
    parked: dict[str, list[int]] = {}  # a frame not said yet -> units that fit only joined
    while heap:
        best, best_price = -1, None
        popped: list[int] = []
        while heap and (best_price is None or best_price[0] <= -heap[0][0]):
            _, n = heapq.heappop(heap)
            if n not in st.left or n in popped:
                continue
            price = st.price(n, max_chars)
            if price is None:
                frame = st.frames[n]
                if (
                    frame is not None
                    and frame.casefold() not in st.said
                    and st.fits_joined(n, max_chars)
                ):
                    parked.setdefault(frame.casefold(), []).append(n)
                continue  # never fits again otherwise: the budget left only shrinks
            popped.append(n)
            if best_price is None or (price[0], -n) > (best_price[0], -best):
                best, best_price = n, price
        if best_price is None:
            break
        for n in popped:
            if n != best:
                heapq.heappush(heap, (-st.bound(n), n))
        st.take(best, best_price)  # the bounds left in the heap stay bounds: values only fall
        for n in parked.pop(st.new_frame, []) if st.new_frame else []:
            heapq.heappush(heap, (-st.bound(n), n))
    return st.chosen


class _State:
    """What is chosen so far and what it changes for the rest (see ``_choose``)."""

    def __init__(self, pool: list[_Unit], everyone: frozenset[str]) -> None:
        self.pool = pool
        self.msgs = [u.msg_ids for u in pool]
        self.words = [_words(u.text) for u in pool]
        self.ents = [_entity(u, everyone) for u in pool]
        self.sessions = [
            {m.source_session_id for m in u.members if m.source_session_id} for u in pool
        ]
        self.frames = [_frame(u.text) for u in pool]
        self.cheapest = [
            len(u.text) if f is None else min(len(u.text), 2 + len(_ending(u.text, f)))
            for u, f in zip(pool, self.frames, strict=True)
        ]
        self.repeated = [False] * len(pool)
        # word -> the units holding it: a choice checks only the units sharing a word
        # with it for wording alike (``_similar``), not every unit left (a 4,000-character
        # plan of 150 memories spent ~60 % of its time comparing word sets)
        self.holding: dict[str, list[int]] = {}
        for k, words in enumerate(self.words):
            for w in words:
                self.holding.setdefault(w, []).append(k)
        self.left = set(range(len(pool)))
        self.chosen: list[_Unit] = []
        self.said: dict[str, int] = {}  # a frame (folded) -> the chosen item that says it
        self.cited: set[str] = set()
        self.heard: set[str] = set()
        self.about: dict[str, int] = {}
        self.used = 0
        self.new_frame = ""  # the frame the last choice began to say, if any

    def value(self, n: int) -> float:
        """The unit's value given what is chosen already."""
        msgs = self.msgs[n]
        new = sum(1 for m in msgs if m not in self.cited) / len(msgs) if msgs else 1.0
        value = self.pool[n].value * (0.15 + 0.85 * new) * (0.2 if self.repeated[n] else 1.0)
        if self.sessions[n] and self.sessions[n] <= self.heard:
            value *= SESSION_SEEN
        ent = self.ents[n]
        if ent and self.about.get(ent, 0) >= PER_ENTITY:
            value *= 0.5 ** (self.about[ent] - PER_ENTITY + 1)
        return value

    def bound(self, n: int) -> float:
        return self.value(n) / (self.cheapest[n] + ITEM_OVERHEAD)

    def fits_joined(self, n: int, max_chars: int) -> bool:
        return self.used + self.cheapest[n] <= max_chars

    def price(self, n: int, max_chars: int) -> tuple[float, int, int] | None:
        """(score, the item it joins or -1, its cost), or None when it does not fit."""
        u, join, cost, frame = self.pool[n], -1, len(self.pool[n].text), self.frames[n]
        if frame is not None and frame.casefold() in self.said:
            join = self.said[frame.casefold()]
            tail = _ending(u.text, frame)
            if len(self.chosen[join].text) + 2 + len(tail) <= MERGE_MAX_CHARS:
                cost = 2 + len(tail)
            else:
                join = -1
        if self.used + cost > max_chars:
            return None
        return self.value(n) / (cost + ITEM_OVERHEAD), join, cost

    def take(self, n: int, price: tuple[float, int, int]) -> None:
        """Choose unit ``n`` at ``price`` and note what it changes for the rest."""
        _, join, cost = price
        self.left.discard(n)
        u, frame = self.pool[n], self.frames[n]
        self.new_frame = ""
        if join >= 0:
            host = self.chosen[join]
            text = host.text + "; " + _ending(u.text, frame or "")
            self.chosen[join] = _Unit(text, host.members + u.members, host.value)
        else:
            self.chosen.append(u)
            if frame is not None and frame.casefold() not in self.said:
                self.said[frame.casefold()] = len(self.chosen) - 1
                self.new_frame = frame.casefold()
        self.used += cost
        self.cited.update(self.msgs[n])
        self.heard.update(self.sessions[n])
        if (ent := self.ents[n]) is not None:
            self.about[ent] = self.about.get(ent, 0) + 1
        shared: dict[int, int] = {}
        for w in self.words[n]:
            for k in self.holding[w]:
                shared[k] = shared.get(k, 0) + 1
        lb = len(self.words[n])
        for k, both in shared.items():
            if k in self.left and not self.repeated[k]:
                la = len(self.words[k])  # ``_similar`` from the counts of shared words
                if min(la, lb) >= SIMILAR * max(la, lb) and both >= SIMILAR * (la + lb - both):
                    self.repeated[k] = True


def _ending(text: str, frame: str) -> str:
    """What ``text`` says after its leading ``frame``."""
    return text[len(frame) :].strip(" :,;").rstrip(_TRAILING)


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    """Worded alike: SIMILAR of their words together are shared (never when one has
    fewer than SIMILAR of the other's words: the sizes alone rule it out)."""
    la, lb = len(a), len(b)
    if min(la, lb) < SIMILAR * max(la, lb):
        return False
    shared = len(a & b)
    return shared >= SIMILAR * (la + lb - shared)


def _entity(u: _Unit, everyone: frozenset[str]) -> str | None:
    """The entity every member names (its id), when there is one besides those most of
    the user's memories name (``everyone``: the user themself)."""
    common: set[str] | None = None
    for m in u.members:
        ids = {e["entity_id"] for e in m.entities} - everyone
        common = ids if common is None else common & ids
    return min(common) if common else None


def _entity_name(u: _Unit, entity_id: str) -> str:
    for m in u.members:
        for e in m.entities:
            if e["entity_id"] == entity_id:
                return e["name"]
    return entity_id


def _item(u: _Unit, everyone: frozenset[str]) -> ProfileItem:
    ent = _entity(u, everyone)
    name = _entity_name(u, ent) if ent else None
    return ProfileItem(u.text, u.memory_ids, u.msg_ids, name, ent)
