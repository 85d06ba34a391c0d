"""Evolution decision prompt (docs/architecture.md#dedup-and-evolution).

Four operations (MERGE is folded into UPDATE). The model only sees small integer ids
("0", "1", ...) mapped from the real memory ids, because models copy short ids
reliably and long UUIDs not; the answer is mapped back, and an id that was not given is
rejected (InventedId) instead of becoming a write against a memory that does not exist.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from memstream.schemas.enums import OpType
from memstream.schemas.facts import ChatMessage, Decision, Similar
from memstream.schemas.json_types import JsonObject
from models.errors import InventedId, MalformedOutput

VERSION = "decide/v1"


class DecisionItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    event: Literal["ADD", "UPDATE", "DELETE", "NONE"]
    id: str | None = None
    text: str | None = None
    old_memory: str | None = None

    @field_validator("event", mode="before")
    @classmethod
    def _upper(cls, v: object) -> object:
        return v.strip().upper() if isinstance(v, str) else v

    @field_validator("id", mode="before")
    @classmethod
    def _id_str(cls, v: object) -> object:
        return str(v).strip() if isinstance(v, (int, str)) and str(v).strip() else None


class DecideResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    decisions: list[DecisionItem]


@dataclass(frozen=True)
class DecideContext:
    new_fact: str
    memories: tuple[tuple[str, str], ...]  # (small id, text) as shown to the model
    real_ids: dict[str, str]  # small id -> real memory id


def build_context(new_fact: str, similar: Sequence[Similar]) -> DecideContext:
    memories: list[tuple[str, str]] = []
    real: dict[str, str] = {}
    for item in similar:
        if item.id in real.values():
            continue
        small = str(len(memories))
        memories.append((small, item.text))
        real[small] = item.id
    return DecideContext(new_fact=new_fact, memories=tuple(memories), real_ids=real)


_SYSTEM = """You are a smart memory manager. You compare one new fact with the existing memories of the same person and decide how the memory must change. Operations:
- ADD: the new fact is information that no memory holds. Leave "id" null; "text" is the fact to store.
- UPDATE: a memory is about the same thing and the new fact adds to it or refines it. Give that memory's "id" and, in "text", ONE merged memory that keeps everything still true from both; do not just overwrite. Example: memory "Likes cheese pizza" + new fact "Likes chicken pizza" -> UPDATE with text "Likes cheese and chicken pizza".
- DELETE: the new fact contradicts a memory (memory "Lives in Berlin", new fact "Moved to Paris, no longer lives in Berlin"). Give that memory's "id", and also ADD the new fact.
- NONE: a memory already says the same thing, or the fact needs no change. Same meaning in other words is NONE: memory "Likes cheese pizza", new fact "Loves cheese pizza" -> NONE.

Rules:
- Use only the ids listed under "Existing memories". Never invent an id. ADD is the only operation without an id.
- Write "text" in the language of the new fact.
- Answer with one JSON object only: {"decisions": [{"event": "ADD"|"UPDATE"|"DELETE"|"NONE", "id": str|null, "text": str|null}]} with at least one decision.

Examples:
Existing memories: []
New fact: Is a software engineer
Output: {"decisions": [{"event": "ADD", "id": null, "text": "Is a software engineer"}]}

Existing memories: [{"id": "0", "text": "Likes cheese pizza"}, {"id": "1", "text": "Name is John"}]
New fact: Loves cheese pizza
Output: {"decisions": [{"event": "NONE", "id": "0", "text": null}]}

Existing memories: [{"id": "0", "text": "喜欢芝士披萨"}]
New fact: 喜欢鸡肉披萨
Output: {"decisions": [{"event": "UPDATE", "id": "0", "text": "喜欢芝士和鸡肉披萨"}]}

Existing memories: [{"id": "0", "text": "Lives in Berlin"}, {"id": "1", "text": "Plays guitar"}]
New fact: Moved to Paris and no longer lives in Berlin
Output: {"decisions": [{"event": "DELETE", "id": "0", "text": null}, {"event": "ADD", "id": null, "text": "Moved to Paris and no longer lives in Berlin"}]}"""


def to_messages(ctx: DecideContext) -> list[ChatMessage]:
    """The chat messages for one decision call (pure)."""
    listed = json.dumps([{"id": i, "text": t} for i, t in ctx.memories], ensure_ascii=False)
    user = f"Existing memories: {listed}\nNew fact: {ctx.new_fact}\n\nReturn the JSON object."
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def to_decisions(obj: JsonObject, ctx: DecideContext) -> list[Decision]:
    """Validate, map small ids back to real ones, reject invented ids, tidy the list.

    NONE entries are dropped when anything else happens; a DELETE always comes with an
    ADD of the new fact (the superseding memory); duplicate targets are malformed.
    """
    resp = DecideResponse.model_validate(obj)
    if not resp.decisions:
        raise MalformedOutput("the decision list is empty (at least one is required)")
    texts = dict(ctx.memories)
    out: list[Decision] = []
    targets: set[str] = set()
    for item in resp.decisions:
        real = None
        if item.event != "ADD" and item.id is not None:
            if item.id not in ctx.real_ids:
                raise InventedId(f"{item.event} names an id that was not given")
            real = ctx.real_ids[item.id]
        op = OpType(item.event)
        if op in (OpType.UPDATE, OpType.DELETE):
            if real is None:
                raise MalformedOutput(f"{op} without an id")
            if real in targets:
                raise MalformedOutput("one id is the target of two operations")
            targets.add(real)
        text = (item.text or "").strip() or None
        if op is OpType.ADD:
            out.append(Decision(op=op, text=text or ctx.new_fact))
        elif op is OpType.UPDATE:
            if not text:
                raise MalformedOutput("UPDATE without the merged text")
            out.append(Decision(op=op, target_id=real, text=text, old_text=texts[item.id or ""]))
        elif op is OpType.DELETE:
            out.append(Decision(op=op, target_id=real, old_text=texts[item.id or ""]))
        else:
            out.append(Decision(op=op, target_id=real))
    return _tidy(out, ctx.new_fact)


def _tidy(decisions: list[Decision], new_fact: str) -> list[Decision]:
    acting = [d for d in decisions if d.op is not OpType.NONE]
    if not acting:
        return decisions[:1]
    adds_seen: set[str] = set()
    tidy: list[Decision] = []
    for d in acting:
        if d.op is OpType.ADD:
            if d.text in adds_seen:
                continue
            adds_seen.add(d.text or "")
        tidy.append(d)
    if any(d.op is OpType.DELETE for d in tidy) and not adds_seen:
        tidy.append(Decision(op=OpType.ADD, text=new_fact))
    return tidy
