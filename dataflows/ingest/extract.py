"""Extraction step: one LLM call per window batch, facts traced back to their event."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from core.hashing import memory_id_for
from dataflows.ingest.items import Extracted, FactItem, Rejected, TurnBatch
from models.errors import ModelError

log = logging.getLogger(__name__)


def extract(llm: object, batch: TurnBatch, today_fn=lambda: datetime.now(UTC).date()) -> Extracted:
    """Facts of every event in the batch; an LLM failure fails the batch's tasks visibly."""
    first = batch.events[0].event
    out = Extracted(user_id=first.user_id, tasks=list(batch.events))
    context = list(batch.context) if getattr(llm, "uses_context", True) else []
    messages = context + [m for i in batch.events for m in i.event.messages]
    owners = []  # message position -> (incoming, position inside its event)
    for inc in batch.events:
        owners.extend((inc, pos) for pos in range(len(inc.event.messages)))
    try:
        facts = llm.extract_facts(messages, first.ownership, first.strategy, today_fn())
    except ModelError as exc:
        reason = f"extraction failed: {type(exc).__name__}: {exc}"
        out.failures = [Rejected(reason, i.source, i.task_id, first.user_id) for i in batch.events]
        return out
    ordinal: dict[tuple[str, int], int] = {}
    for fact in facts:
        pos = fact.msg_index - len(context)
        if pos < 0 or pos >= len(owners):
            continue  # a fact of the context turns was stored with the earlier burst
        inc, local = owners[pos]
        key = (inc.task_id, local)
        n = ordinal.get(key, 0)
        ordinal[key] = n + 1
        local_fact = fact.model_copy(
            update={"msg_index": local, "msg_id": inc.event.messages[local].msg_id}
        )
        out.facts.append(
            FactItem(
                local_fact,
                memory_id_for(f"{inc.task_id}:{local}", n, user_id=inc.event.user_id),
                inc.task_id,
                inc,
            )
        )
    return out
