"""Extraction step: one LLM call per window batch, facts traced back to their event.

Who and when travel with each message (docs/architecture.md#what-is-remembered): a message
without its own ``ts`` takes its event's, so relative dates resolve against when it was
said, and the LLM is given the conversation's date as "today" (the latest message time of
the batch), never the server's clock unless nothing in the batch is dated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime

from core import metrics
from core.hashing import memory_id_for
from core.seams import LLMLike
from dataflows.ingest.items import Extracted, FactItem, Incoming, Rejected, TurnBatch
from memstream.schemas.events import ConversationEvent, Message
from models.errors import ModelError
from models.lang import utc_date

log = logging.getLogger(__name__)


def extract(
    llm: LLMLike,
    batch: TurnBatch,
    today_fn: Callable[[], date] = lambda: datetime.now(UTC).date(),
) -> Extracted:
    """Facts of every event in the batch; an LLM failure fails the batch's tasks visibly."""
    first = batch.events[0].event
    out = Extracted(user_id=first.user_id, tasks=list(batch.events), tenant_id=first.tenant_id)
    context = list(batch.context) if llm.uses_context else []
    messages = context + [m for i in batch.events for m in dated_messages(i.event)]
    owners: list[
        tuple[Incoming, int]
    ] = []  # message position -> (incoming, position inside its event)
    for inc in batch.events:
        owners.extend((inc, pos) for pos in range(len(inc.event.messages)))
    today = conversation_date(messages, today_fn)
    try:
        with metrics.llm_call(llm, "extract"):
            facts = llm.extract_facts(messages, first.ownership, first.strategy, today)
    except ModelError as exc:
        reason = f"extraction failed: {type(exc).__name__}: {exc}"
        out.failures = [
            Rejected(reason, i.source, i.task_id, first.user_id, first.tenant_id)
            for i in batch.events
        ]
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
                memory_id_for(
                    f"{inc.task_id}:{local}",
                    n,
                    user_id=inc.event.user_id,
                    tenant=inc.event.tenant_id,
                ),
                inc.task_id,
                inc,
            )
        )
    return out


def dated_messages(event: ConversationEvent) -> list[Message]:
    """The event's messages, each without a ``ts`` given the event's ``ts`` (if any)."""
    ts = event.ts
    if ts is None:
        return list(event.messages)
    return [m if m.ts is not None else m.model_copy(update={"ts": ts}) for m in event.messages]


def conversation_date(messages: Sequence[Message], today_fn: Callable[[], date]) -> date:
    """The UTC day of the latest dated message, else the clock's today."""
    stamps = [utc_date(m.ts) for m in messages if m.ts is not None]
    return max(stamps) if stamps else today_fn()
