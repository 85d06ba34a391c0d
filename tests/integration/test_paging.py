"""Paged-out memories through real Kafka (issue 32, item 3;
docs/architecture.md#consolidation-and-paged-out-memories): a memory evicted for room is
ARCHIVED and still found by default recall; one archived by decay is not
(``include_archived`` reaches it); a whole-user purge leaves none recallable."""

from __future__ import annotations

import dataclasses
import random
import threading
from datetime import timedelta

import pytest

from dataflows.ingest.flow import build_flow
from dataflows.lifecycle.scan import run_pass
from dataflows.lifecycle.submit import KafkaVia
from dataflows.runner import FlowThread
from memstream.schemas.enums import Level, Status
from memstream.schemas.tenants import UserKey
from sinks.kafka import KafkaBus
from tests.helpers.lifecycle import T0, record, seed
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

CAPACITY = 20
APP = f"page_{random.getrandbits(32):08x}"

# 60 distinct one-line facts: three times what the scope holds
FACTS = [
    "My passport number ends in 4471.",
    "I keep a bonsai juniper on my desk.",
    "My sister Ingrid lives in Trondheim.",
    "I play the cello in a community orchestra.",
    "My car is a red Volvo from 2011.",
    "I am allergic to penicillin.",
    "I collect antique fountain pens.",
    "My daughter studies marine biology.",
    "I ran the Berlin marathon in 2019.",
    "My favourite painter is Caravaggio.",
    "I brew kombucha in the pantry.",
    "I speak fluent Portuguese.",
    "My landlord is called Mr Okafor.",
    "I have a parrot named Kiwi.",
    "I commute by folding bicycle.",
    "My blood type is O negative.",
    "I grew up near Lake Balaton.",
    "I knit scarves for the winter market.",
    "My dentist appointment is on Thursdays.",
    "I am learning to play chess openings.",
    "My brother repairs vintage motorcycles.",
    "I volunteer at the animal shelter.",
    "My wifi router sits behind the sofa.",
    "I dislike the taste of licorice.",
    "I restore old wooden canoes.",
    "My grandmother was a seamstress in Naples.",
    "I photograph lighthouses on weekends.",
    "My phone case is made of cork.",
    "I once met an astronaut at a conference.",
    "I store tax documents in a blue binder.",
    "My gym membership renews in March.",
    "I can solve a Rubik cube in two minutes.",
    "My neighbour breeds racing pigeons.",
    "I drink oat milk with my coffee.",
    "I write poetry in a leather notebook.",
    "My niece is afraid of thunderstorms.",
    "I rent a garden plot by the railway.",
    "My laptop sticker shows a narwhal.",
    "I taught English in Hanoi for a year.",
    "My cousin owns a bakery in Lyon.",
    "I sleep with a weighted blanket.",
    "My umbrella has a duck-shaped handle.",
    "I go birdwatching at the estuary.",
    "My first job was at a cinema kiosk.",
    "I have a scar from a climbing accident.",
    "My wedding anniversary is in October.",
    "I meditate with a Tibetan singing bowl.",
    "My favourite cheese is aged gouda.",
    "I carve spoons from cherry wood.",
    "My mentor retired to Tasmania.",
    "I am colour-blind to red and green.",
    "My piano teacher uses a metronome shaped like a cat.",
    "I keep honeybees on the roof.",
    "My favourite board game is Carcassonne.",
    "I have a fear of deep water.",
    "My uncle flies cargo planes to Anchorage.",
    "I save receipts in a shoebox.",
    "My apartment faces a cathedral.",
    "I forage for chanterelles in autumn.",
    "My godson plays water polo.",
]


@pytest.fixture(scope="module")
def small(settings, stores, runtime):
    """An ingest flow on its own topics whose runtime gives APP a capacity of 20 and does
    not consolidate (so a full scope evicts: what this file is about).

    It shares the session's stores and hot cache, so the session's API recalls what it
    writes; its own stop event, so stopping it leaves the session's flows running.
    """
    prefix = f"page{random.getrandbits(32):08x}."
    own = dataclasses.replace(
        stores,
        kafka=KafkaBus(settings.kafka_bootstrap, settings.kafka_partitions, 1, 3_600_000, prefix),
    )
    own.kafka.setup()
    own.kafka.ensure_topics()
    overrides = {
        "kafka_topic_prefix": prefix,
        "consolidation_enabled": False,
        "app_overrides": {APP: {"capacity_per_app": CAPACITY}},
    }
    rt = dataclasses.replace(
        runtime,
        settings=runtime.settings.model_copy(update=overrides),
        stores=own,
        stop=threading.Event(),
    )
    thread = FlowThread("ingest-paging", lambda: build_flow(rt), None, 1.0, stop=rt.stop)
    thread.start()
    thread.running.wait(30)
    yield rt
    thread.stop()


def _say(rt, user_id: int, facts: list[str], tag: str) -> list[dict]:
    """Each fact as its own turn (its own task and msg id); waits until all are done."""
    events = [
        {
            "task_id": f"{tag}-{user_id}-{n}",
            "user_id": user_id,
            "app_id": APP,
            "session_id": f"{tag}{n}",
            "messages": [{"role": "user", "content": f, "msg_id": f"{tag}-{user_id}-{n}-m"}],
        }
        for n, f in enumerate(facts)
    ]
    topic = rt.stores.kafka.topic("memory.conversations")
    for e in events:
        rt.stores.kafka.produce_json(topic, str(user_id), e)
    rt.stores.kafka.flush(15)
    for e in events:
        status = wait_for(
            lambda e=e: (
                (s := rt.tasks.get(e["task_id"], tenant="default"))
                and s["status"] in ("done", "failed")
                and s
            ),
            timeout=180,
            what=e["task_id"],
        )
        assert status["status"] == "done", status
    return events


def _recall(api, user_id: int, query: str, **extra) -> list[dict]:
    body = {"user_id": user_id, "query": query, "scope": {"app_id": APP}, "top_k": 10, **extra}
    resp = api.post("/memory/v1/recall", json=body).json()
    assert resp["code"] == 0, resp
    return resp["data"]["memories"]


def _changes(rt, user_id: int) -> list[tuple]:
    return rt.stores.clickhouse.query(
        "SELECT memory_id, op_type, reason FROM memstream.memory_changelog FINAL "
        "WHERE user_id = {u:UInt64}",
        {"u": user_id},
    )


def test_a_scope_told_three_times_its_capacity_keeps_every_source_findable(
    small, runtime, api, ingest, user_id
) -> None:
    events = _say(small, user_id, FACTS, "pg")

    everything = small.memories.load(user_id, tenant="default")
    active = [m for m in everything if m.status is Status.ACTIVE]
    archived = [m for m in everything if m.status is Status.ARCHIVED]
    assert 0 < len(active) <= CAPACITY
    assert len(archived) >= 2 * CAPACITY - 5  # evicted for room, paged out
    evictions = {c[0]: c[2] for c in _changes(small, user_id) if c[1] == "ARCHIVE"}
    assert {m.memory_id for m in archived} <= set(evictions)
    assert all(r.startswith("capacity eviction") for r in evictions.values())

    # every fact is found by its source in the top 10 of a default recall
    statuses = {}
    for e in events:
        msg = e["messages"][0]
        found = _recall(api, user_id, msg["content"])
        by_source = [m for m in found if msg["msg_id"] in m["source"]["msg_ids"]]
        assert by_source, (msg, [m["content"] for m in found])
        assert all(len(m["content"]) <= 320 for m in by_source)
        statuses[msg["msg_id"]] = by_source[0]["status"]
    assert list(statuses.values()).count("ARCHIVED") >= 2 * CAPACITY - 5
    assert set(statuses.values()) == {"ACTIVE", "ARCHIVED"}

    # the same after a cold load: from the Redis snapshot, then from the stores alone
    assert runtime.cache.snapshots is not None
    for drop_snapshot in (False, True):
        runtime.cache.invalidate(user_id, tenant="default")
        if drop_snapshot:
            runtime.cache.snapshots.drop([UserKey("default", user_id)])
        loads = runtime.cache.snapshot_loads
        idx = runtime.cache.get(user_id, tenant="default")
        assert runtime.cache.snapshot_loads == loads + (0 if drop_snapshot else 1)
        assert idx.paged is not None and len(idx.paged) == len(archived)
        assert len(idx) == len(active)
        for e in events[::7]:
            msg = e["messages"][0]
            ids = {i for m in _recall(api, user_id, msg["content"]) for i in m["source"]["msg_ids"]}
            assert msg["msg_id"] in ids, msg

    # an evicted fact said again is restored (ACTIVE, a RESTORE row), no longer paged out
    back = archived[0]
    said = {e["messages"][0]["msg_id"]: e["messages"][0]["content"] for e in events}
    _say(small, user_id, [said[back.msg_ids[0]]], "again")
    assert small.memories.get(user_id, back.memory_id, tenant="default").status is Status.ACTIVE
    assert (back.memory_id, "RESTORE") in {(c[0], c[1]) for c in _changes(small, user_id)}
    found = [m for m in _recall(api, user_id, back.content) if m["memory_id"] == back.memory_id]
    assert [m["status"] for m in found] == ["ACTIVE"]
    idx = runtime.cache.get(user_id, tenant="default")
    with idx.lock:
        assert back.memory_id in idx and back.memory_id not in idx.paged

    # a whole-user purge: nothing of it, paged out or not, is recalled any more
    purge = api.post("/memory/v1/purge", json={"user_id": user_id}).json()
    assert purge["code"] == 0, purge
    for e in events[::5]:
        assert _recall(api, user_id, e["messages"][0]["content"]) == []


def test_decayed_and_expired_memories_stay_out_of_default_recall_an_evicted_one_does_not(
    small, runtime, api, user_id
) -> None:
    decays, evicted, expired = seed(
        small,
        record(user_id, "I used to collect rare seashells", level=Level.APP, app_id=APP),
        record(
            user_id,
            "I once owned a vintage typewriter",
            level=Level.APP,
            app_id=APP,
            status=Status.ARCHIVED,
            archived_at=T0,
            weight=0.7,
        ),
        record(  # archived when it expired (its weight still high)
            user_id,
            "I have a ferry ticket to Helsinki",
            level=Level.APP,
            app_id=APP,
            status=Status.ARCHIVED,
            archived_at=T0,
            weight=0.7,
            expire_at=T0 - timedelta(minutes=1),
        ),
    )
    # a pass 91 days on archives the first for decay (its weight falls below 0.10)
    summary = run_pass(small, T0 + timedelta(days=91), KafkaVia(small.stores, 60), users=[user_id])
    assert summary["failed_commands"] == 0 and summary["archived"] == 1, summary
    gone = small.memories.get(user_id, decays.memory_id, tenant="default")
    assert gone.status is Status.ARCHIVED and gone.weight < small.settings.archive_threshold

    def ids(query: str, **extra) -> dict[str, str]:
        return {m["memory_id"]: m["status"] for m in _recall(api, user_id, query, **extra)}

    assert decays.memory_id not in ids("rare seashells")
    assert ids("rare seashells", include_archived=True).get(decays.memory_id) == "ARCHIVED"
    assert expired.memory_id not in ids("ferry ticket to Helsinki")
    assert ids("ferry ticket Helsinki", include_archived=True).get(expired.memory_id) == "ARCHIVED"
    # an ARCHIVED one still worth keeping (evicted for room) is found by default recall
    assert ids("vintage typewriter").get(evicted.memory_id) == "ARCHIVED"
    # and once it has decayed below the threshold (a year on), no more
    idx = runtime.cache.get(user_id, tenant="default")
    with idx.lock:
        from core import record_codec

        later = (T0 + timedelta(days=400) - record_codec.EPOCH) // timedelta(microseconds=1)
        assert idx.paged is not None and not idx.paged.paged_rows(later, small.settings).any()
