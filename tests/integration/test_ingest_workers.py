"""The ingest flow with 2 workers in one process gives what 1 worker gives.

The same conversations (the same users' turns, in the same order) go through the real
flow three times over the session's stores, each time for other user ids: with 1
worker, then 2 workers in one process, then 1 worker again. The memories, the change log
(per user, in the order of the user's turns) and the task results are the same, and with
2 workers each worker embedded the facts of its own users. A finite input (Bytewax's
TestingSource of Kafka messages) ends each run at its end of input.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta

import pytest
from bytewax.connectors.kafka import KafkaSourceMessage
from bytewax.run import cli_main
from bytewax.testing import TestingSource

from core.derived import is_profile_id
from dataflows.ingest.flow import build_flow
from dataflows.ingest.shards import WorkerCounts, route
from memstream.schemas.enums import MemType, Status
from memstream.schemas.events import TOPIC_CONVERSATIONS
from memstream.schemas.tenants import DEFAULT_TENANT, scoped
from sinks.changelog import ChangeLog

pytestmark = pytest.mark.integration

N_USERS = 8
# each user's turns, in order: new facts, a fact said again (skipped), more facts
TURNS = [
    ["I live in Lisbon near the river.", "I work as a carpenter."],
    ["My favourite food is ramen with extra egg."],
    ["I live in Lisbon near the river.", "I have a dog named Biscuit."],
    ["I started learning the piano in 2019.", "My sister is called Ana."],
    ["I have a dog named Biscuit.", "I play chess every Sunday."],
]


def _messages(topic: str, base: int) -> list[KafkaSourceMessage]:
    out, offset = [], 0
    for i, turns in enumerate(TURNS):  # interleaved: user 0's turn i, user 1's turn i, ...
        for u in range(N_USERS):
            user = base + u
            value = {
                "task_id": f"w{base}-{u}-{i}",
                "user_id": user,
                "session_id": "s1",
                "messages": [
                    {"role": "user", "content": t, "msg_id": f"{u}-{i}-{j}"}
                    for j, t in enumerate(turns)
                ],
            }
            out.append(
                KafkaSourceMessage(
                    str(user).encode(),
                    json.dumps(value).encode(),
                    topic=topic,
                    partition=u % 2,
                    offset=offset,
                )
            )
            offset += 1
    return out


def _run(runtime, base: int, workers: int) -> dict:
    # two turns a window, flushed by count (or the end of input), never by the clock:
    # a user's turns reach the writer as the same batches in every run, in order
    update = {"session_max_turns": 2, "session_gap_s": 600.0}
    rt = dataclasses.replace(runtime, settings=runtime.settings.model_copy(update=update))
    counts = WorkerCounts()
    source = TestingSource(_messages(rt.stores.kafka.topic(TOPIC_CONVERSATIONS), base))
    flow = build_flow(rt, source, flow_id=f"ingest-w{workers}", workers=workers, embedded=counts)
    cli_main(flow, workers_per_process=workers, epoch_interval=timedelta(seconds=0.5))
    return {"embedded": counts.snapshot(), **_results(rt, base)}


def _results(rt, base: int) -> dict:
    """What the run left, with the user ids and task ids made relative to ``base``."""
    log = ChangeLog(rt.stores.clickhouse, rt.memories.cipher)
    memories, changes, tasks = {}, {}, {}
    for u in range(N_USERS):
        user = base + u
        memories[u] = sorted(
            (m.content, str(m.status), str(m.level), str(m.mem_type))
            for m in rt.memories.load(user, tenant=DEFAULT_TENANT, mem_types=list(MemType))
            if m.status is Status.ACTIVE or not is_profile_id(m.memory_id)
        )
        rows, _ = log.query(user, tenant=DEFAULT_TENANT, limit=1000)
        # the memories' own rows: a profile's versions follow how timing grouped the
        # inputs into batches (its final words are in ``memories`` via mem_types below)
        rows = [r for r in rows if not is_profile_id(r.memory_id)]
        rel = [(r.op_type, r.content_before, r.content_after, _rel(r.task_id, base)) for r in rows]
        changes[u] = sorted(rel, key=lambda c: (c[3], c))
        # in order: a later turn's changes are never older than an earlier turn's
        first_seen: dict[str, object] = {}
        for r in rows:
            first_seen.setdefault(_rel(r.task_id, base), r.op_time)
        turns = sorted(first_seen, key=lambda t: int(t.rsplit("-", 1)[1]))
        times = [first_seen[t] for t in turns]
        assert times == sorted(times), (u, turns, times)
        ids = [f"w{base}-{u}-{i}" for i in range(len(TURNS))]
        found = rt.tasks.get_many(ids, tenant=DEFAULT_TENANT)
        tasks[u] = [
            (found[t]["status"], json.dumps(found[t].get("counts", {}), sort_keys=True))
            for t in ids
        ]
    return {"memories": memories, "changes": changes, "tasks": tasks}


def _rel(task_id: str, base: int) -> str:
    return task_id.removeprefix(f"w{base}-")


def test_two_workers_in_one_process_store_what_one_worker_stores(runtime, user_id) -> None:
    bases = [(user_id % 10**12) * 1000 + k * 100 for k in range(3)]
    one = _run(runtime, bases[0], workers=1)
    two = _run(runtime, bases[1], workers=2)
    again = _run(runtime, bases[2], workers=1)

    assert all(st == "done" for per_user in one["tasks"].values() for st, _ in per_user)
    facts = sum(len(m) for m in one["memories"].values())
    assert facts >= N_USERS * 7  # the turns gave memories (the said-again ones skipped)
    for key in ("memories", "changes", "tasks"):
        assert two[key] == one[key], key
        assert again[key] == one[key], key

    # one worker embedded everything; two workers each embedded their own users' facts
    total = sum(one["embedded"].values())
    assert set(one["embedded"]) == {0} and total > 0
    assert set(two["embedded"]) == {0, 1} and sum(two["embedded"].values()) == total
    # exactly its own users': every user says the same turns, so as many facts each
    per_user, rest = divmod(total, N_USERS)
    assert rest == 0
    owners = [route(scoped(DEFAULT_TENANT, str(bases[1] + u)), 2) for u in range(N_USERS)]
    assert two["embedded"] == {w: owners.count(w) * per_user for w in (0, 1)}
