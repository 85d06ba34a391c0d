"""A replay of a batch that became durable, but whose task status was never recorded
(Redis went down between the two, the flow restarted from its snapshot): it writes
nothing again, and the status it then records says what the task did — added, with
the memory's id — not "skipped"."""

from __future__ import annotations

import pytest

from core.hashing import memory_id_for
from dataflows.ingest.items import Extracted, FactItem, Incoming, Source
from dataflows.ingest.writer import Writer
from memstream.schemas.events import ConversationEvent
from memstream.schemas.facts import Fact

pytestmark = pytest.mark.integration


def _extracted(rt, user_id: int, task: str, text: str) -> Extracted:
    event = ConversationEvent(
        task_id=task,
        user_id=user_id,
        messages=[{"role": "user", "content": text, "msg_id": f"{task}-0"}],
    )
    inc = Incoming(event, task, Source("memory.conversations", 0, 0, None, None))
    fact = FactItem(
        Fact(text=text, msg_index=0, msg_id=f"{task}-0"),
        memory_id_for(task, 0, user_id=user_id, tenant="default"),
        task,
        inc,
        rt.embedder.embed([text])[0],
    )
    return Extracted(user_id, [inc], [fact])


def test_replay_after_a_lost_task_status_reports_the_add_and_writes_nothing(
    runtime, user_id
) -> None:
    item = _extracted(runtime, user_id, f"replay-{user_id}", "User keeps bees on the roof")
    first = Writer(runtime).apply_extracted(item)
    runtime.memories.write(first.batch)  # durable; the task status write then failed
    (memory_id,) = first.results[0].memory_ids
    runtime.cache.clear()  # what the flow runner does before the restart

    again = Writer(runtime).apply_extracted(item)
    assert again.batch.memories == [] and again.batch.changes == []
    r = again.results[0]
    assert (r.added, r.skipped, r.memory_ids) == (1, 0, [memory_id])
    assert [m.memory_id for m in runtime.memories.load(user_id, tenant="default")] == [memory_id]


def test_entities_resolve_to_the_same_ids_after_a_restart(runtime, user_id) -> None:
    """The registry is keyed state rebuilt from the stored links: after the cache is
    cleared (a restart), "my sister" and "Mel" resolve to the entities the first run
    made, and a replay of the first batch links what it linked before."""
    first = _extracted(runtime, user_id, f"ent1-{user_id}", "My sister Melanie lives in Lyon")
    one = Writer(runtime).apply_extracted(first)
    runtime.memories.write(one.batch)
    links = {x["name"]: x["entity_id"] for x in one.batch.memories[0].entities}
    assert set(links) == {"Melanie", "Lyon"}
    runtime.cache.clear()  # the restart: the registry is gone with the index

    later = _extracted(runtime, user_id, f"ent2-{user_id}", "My sister and Mel went to Lyon")
    two = Writer(runtime).apply_extracted(later)
    runtime.memories.write(two.batch)
    got = {x["entity_id"] for x in two.batch.memories[0].entities}
    assert got == {links["Melanie"], links["Lyon"]}

    runtime.cache.clear()
    runtime.memories.write(Writer(runtime).apply_extracted(first).batch)  # a replay
    (stored,) = [
        m for m in runtime.memories.load(user_id, tenant="default") if "Melanie" in m.content
    ]
    assert {x["entity_id"] for x in stored.entities} == set(links.values())
