"""The context call's assembly: one block an agent pastes into its prompt for a turn
(docs/architecture.md#the-context-call).

Pure: the profile's items (``core.profile``), the recalled memories in rank order, the
entities the turn and those memories name (each with its ACTIVE memories) and a
character budget in; the items kept and their rendered text out. What it decides:

- **sections**, in reading order: "About the user" (the profile), "Relevant memories"
  (recall's), "People and things" (one short summary per entity); one line per item,
  an empty section left out. The whole text, headers and line breaks included, fits
  ``max_chars``;
- **priority** when the budget is short, items kept whole or not at all: the profile's
  first item, then its next ones in its order while the text stays within
  :data:`PROFILE_SHARE` of the budget; then the best memory, then the next ones in rank
  order while the text stays within :data:`MEMORY_SHARE`; then the entities; then
  whatever of the profile and the memories is left, in that order, up to the whole
  budget. An item that does not fit is skipped and a shorter later one may still be
  kept;
- **nothing said twice**: an item citing a memory an item kept before states already is
  skipped (a memory the profile cites is not repeated as a memory), and an entity's
  summary is planned (``core.profile.plan_profile``, as the entity view's summary) from
  its memories that no kept item states yet, within :data:`ENTITY_MAX_CHARS` and the
  room left.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from core.profile import ProfileItem, plan_profile
from memstream.schemas.limits import is_blank
from memstream.schemas.memory import MemoryRecord

Kind = Literal["profile", "memory", "entity"]
SECTIONS: dict[Kind, str] = {
    "profile": "## About the user",
    "memory": "## Relevant memories",
    "entity": "## People and things",
}
BULLET = "- "
_SPACE = re.compile(r"\s")
PROFILE_SHARE = 0.4  # the profile's first items: up to this share of the budget
MEMORY_SHARE = 0.8  # then the best memories: the text up to this share
ENTITY_MAX_CHARS = 300  # one entity's line, at most
MAX_ENTITIES = 5  # entities offered, at most, in the order given
LAST_TURNS = 3  # the user turns recalled for when no query is given
MAX_QUERY_CHARS = 4096  # recall's longest query (memstream.schemas.requests.RecallRequest)


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One line of the context and exactly what it states."""

    kind: Kind
    text: str
    memory_ids: tuple[str, ...]
    msg_ids: tuple[str, ...]
    entity: str | None = None  # an entity item's name, or a profile item's entity
    entity_id: str | None = None  # an entity item's id


@dataclass(frozen=True, slots=True)
class EntityNote:
    """An entity to summarise: its id, name, type and its ACTIVE memories in scope."""

    entity_id: str
    name: str
    type: str
    records: Sequence[MemoryRecord]


@dataclass(frozen=True, slots=True)
class Context:
    items: tuple[ContextItem, ...]
    text: str


def one_line(text: str) -> str:
    """``text`` on one line: runs of whitespace (line breaks included) as one space."""
    return " ".join(text.split())


def turn_query(turns: Sequence[tuple[str, str]], max_chars: int = MAX_QUERY_CHARS) -> str | None:
    """What to recall for the agent's last turns ``(role, content)``: the last
    :data:`LAST_TURNS` user turns (none: the last turns of any role), joined one a line,
    kept to their last ``max_chars`` characters; None when that says nothing."""
    said = [(role, text.strip()) for role, text in turns if not is_blank(text)]
    chosen = [t for role, t in said if role == "user"] or [t for _, t in said]
    text = "\n".join(chosen[-LAST_TURNS:])
    if len(text) > max_chars:  # the latest words count: keep the end, from a whole word
        text = text[-max_chars:]
        cut = _SPACE.search(text, 0, 64)
        text = text[cut.end() :] if cut else text
    text = text.strip()
    return None if not text or is_blank(text) else text


def render(items: Sequence[ContextItem]) -> str:
    """The sections of ``items`` (module docstring); "" when there are none."""
    blocks = []
    for kind, header in SECTIONS.items():
        lines = [BULLET + i.text for i in items if i.kind == kind]
        if lines:
            blocks.append("\n".join([header, *lines]))
    return "\n\n".join(blocks)


@dataclass
class _Budget:
    """The items kept so far and the length their rendering takes, kept incrementally."""

    max_chars: int
    kept: list[tuple[int, ContextItem]] = field(default_factory=list)  # (offer order, item)
    stated: set[str] = field(default_factory=set)
    lines: dict[Kind, int] = field(default_factory=dict)  # characters of each section's lines

    def length_with(self, item: ContextItem | None = None) -> int:
        sizes = dict(self.lines)
        if item is not None:
            sizes[item.kind] = sizes.get(item.kind, 0) + len(BULLET) + len(item.text) + 1
        blocks = [len(SECTIONS[k]) + n for k, n in sizes.items()]
        return sum(blocks) + 2 * (len(blocks) - 1) if blocks else 0

    def offer(self, order: int, item: ContextItem, cap: float) -> bool:
        """Keep ``item`` if it says something new and the text stays within ``cap``."""
        if not item.text or self.stated.intersection(item.memory_ids):
            return False
        if self.length_with(item) > min(cap, self.max_chars):
            return False
        self.kept.append((order, item))
        self.stated.update(item.memory_ids)
        self.lines[item.kind] = self.lines.get(item.kind, 0) + len(BULLET) + len(item.text) + 1
        return True


def profile_item(p: ProfileItem) -> ContextItem:
    return ContextItem("profile", one_line(p.text), p.memory_ids, p.msg_ids, p.entity)


def memory_item(r: MemoryRecord) -> ContextItem:
    return ContextItem("memory", one_line(r.content), (r.memory_id,), tuple(r.msg_ids))


def assemble(
    profile: Sequence[ProfileItem],
    memories: Sequence[MemoryRecord],
    entities: Sequence[EntityNote],
    max_chars: int,
    *,
    now: datetime,
) -> Context:
    """The context within ``max_chars`` (module docstring): ``profile`` in reading order,
    ``memories`` best first, ``entities`` in the order to offer them."""
    budget = _Budget(max_chars)
    offered = [profile_item(p) for p in profile] + [memory_item(r) for r in memories]
    rest: list[int] = []
    for n, item in enumerate(offered):
        share = PROFILE_SHARE if item.kind == "profile" else MEMORY_SHARE
        first = item.kind not in budget.lines  # the first of its kind: the whole budget
        if not budget.offer(n, item, max_chars if first else share * max_chars):
            rest.append(n)
    for n, note in enumerate(entities[:MAX_ENTITIES], start=len(offered)):
        line = _entity_item(note, budget, now)
        if line is not None:
            budget.offer(n, line, max_chars)
    for n in rest:
        budget.offer(n, offered[n], max_chars)
    kinds = list(SECTIONS)
    items = tuple(i for _, i in sorted(budget.kept, key=lambda k: (kinds.index(k[1].kind), k[0])))
    return Context(items, render(items))


def _entity_item(note: EntityNote, budget: _Budget, now: datetime) -> ContextItem | None:
    """The entity's line from what no kept item states yet, within the room left."""
    fresh = [r for r in note.records if r.memory_id not in budget.stated]
    head = f"{note.name} ({note.type}): "
    empty = ContextItem("entity", head, (), (), note.name, note.entity_id)
    room = min(ENTITY_MAX_CHARS - len(head), budget.max_chars - budget.length_with(empty))
    if not fresh or room <= 0:
        return None
    said = plan_profile(fresh, room, now=now)
    text = head + "; ".join(one_line(p.text) for p in said)
    while said and len(text) > len(head) + room:  # the "; " between them did not fit
        said.pop()
        text = head + "; ".join(one_line(p.text) for p in said)
    if not said:
        return None
    ids = tuple(m for p in said for m in p.memory_ids)
    msgs = tuple(dict.fromkeys(m for p in said for m in p.msg_ids))
    return ContextItem("entity", text, ids, msgs, note.name, note.entity_id)
