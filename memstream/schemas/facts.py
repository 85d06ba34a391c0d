"""Values that cross the LLM seam: extracted facts and evolution decisions.

They are what ``core.seams.LLMLike`` takes and returns, so they live here, below core and
models alike (docs/architecture.md#code-layout). Frozen pydantic models like the rest
of ``memstream/schemas/``: a fact or decision, once produced, is only read (written to the
changelog, applied by the keyed writer).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memstream.schemas.enums import MemType, OpType
from memstream.schemas.limits import STORE_TIME_MAX, STORE_TIME_MIN, WrittenType

ChatMessage = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": ...}

DECISION_OPS = frozenset({OpType.ADD, OpType.UPDATE, OpType.DELETE, OpType.NONE})


class FactEntity(BaseModel):
    """An entity an LLM extractor says a fact names (docs/architecture.md#entities):
    the name as the fact says it, its type, and the user's relation to it when the turn
    says one ("sister", "dog")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    type: str = Field(min_length=1, max_length=64)
    relation: str | None = Field(default=None, max_length=64)


class Fact(BaseModel):
    """One self-contained statement worth remembering, traced to the turn it came from.

    ``msg_index`` is the position in the message list given to ``extract_facts`` (always
    set); ``msg_id`` is that message's id when the producer gave one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(min_length=1)
    msg_index: int = Field(ge=0)
    msg_id: str | None = None
    mem_type: WrittenType = MemType.SEMANTIC
    time_bound: bool = False  # refers to a dated event or plan (initial weight 0.85)
    expire_at: date | None = None  # hint: after this day the fact is likely stale
    # the entities an LLM extractor named, typed; None: not given (the rules find them)
    entities: tuple[FactEntity, ...] | None = None

    @field_validator("expire_at")
    @classmethod
    def _storable(cls, v: date | None) -> date | None:
        # a model's hint of year 9999 (or 0001) is no date the stores hold: no hint, the
        # fact is kept (the caller's own instants are refused at the edge instead)
        if v is not None and not STORE_TIME_MIN.date() <= v < STORE_TIME_MAX.date():
            return None
        return v


class Similar(NamedTuple):
    """An existing memory offered to evolution: its real id, text and cosine score.

    The score is optional: the ``rules`` provider needs it, LLM providers ignore it.
    ``merged``: the memory consolidates several statements (more than one source turn);
    the rules never supersede one, since one of its statements ending ends not the rest.
    Plain ``(id, text)`` or ``(id, text, score)`` tuples are accepted wherever this is.
    """

    id: str
    text: str
    score: float | None = None
    merged: bool = False


# What ``decide`` accepts of a similar memory: a ``Similar`` or a plain (id, text[, score]).
SimilarLike = Similar | tuple[str, str] | tuple[str, str, float | None]


class Decision(BaseModel):
    """One evolution operation (docs/architecture.md#dedup-and-evolution), ready to map onto
    the store.

    - ADD: store ``text`` as a new memory.
    - UPDATE: rewrite memory ``target_id`` to ``text`` (merged, same id); ``old_text`` is
      what it said before, for the changelog.
    - DELETE: memory ``target_id`` is contradicted by the new fact; it is SUPERSEDED, never
      erased, by the ADD that always accompanies it in the same decision list.
    - NONE: nothing to store; ``target_id`` names the memory that already says it, if any.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    op: OpType
    target_id: str | None = None
    text: str | None = None
    old_text: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Decision:
        if self.op not in DECISION_OPS:
            raise ValueError("op must be one of ADD, UPDATE, DELETE, NONE")
        if self.op in (OpType.UPDATE, OpType.DELETE) and not self.target_id:
            raise ValueError(f"{self.op} needs a target_id")
        if self.op is OpType.ADD and self.target_id:
            raise ValueError("ADD creates a new memory and takes no target_id")
        if self.op in (OpType.ADD, OpType.UPDATE) and not (self.text and self.text.strip()):
            raise ValueError(f"{self.op} needs a text")
        return self


class DecisionResult(BaseModel):
    """What evolution decided for one fact, and whether it had to degrade to append.

    ``degraded`` is true when the LLM failed and the decisions are the append fallback
    (a single ADD, left to hash dedup); ``reason`` then says why, for the changelog/metrics.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    decisions: list[Decision]
    degraded: bool = False
    reason: str | None = None


def as_similar(items: Iterable[SimilarLike]) -> list[Similar]:
    """Normalize ``[(id, text)]`` / ``[(id, text, score)]`` / ``[Similar]`` to Similar."""
    out: list[Similar] = []
    for item in items:
        if isinstance(item, Similar):
            out.append(item)
            continue
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise TypeError(f"similar items are (id, text[, score]) tuples, got {item!r}")
        score = float(item[2]) if len(item) == 3 and item[2] is not None else None
        out.append(Similar(str(item[0]), str(item[1]), score))
    return out
