"""Consolidation before eviction through real Kafka: a scope told 3× its capacity, and the
scheduled consolidation of a scope above the high-water mark
(docs/architecture.md#consolidation-and-paged-out-memories). A merge compresses: only the
same frame with other values (or the same fact repeated) merges, into a text shorter than
its members together and within ``consolidation_max_chars``."""

from __future__ import annotations

import dataclasses
import random
import threading

import pytest

from core.compression import MARGIN
from core.sameness import specifics
from dataflows.ingest.flow import build_flow
from dataflows.lifecycle.highwater import crowded_users
from dataflows.lifecycle.scan import run_pass
from dataflows.lifecycle.submit import DirectVia, KafkaVia
from dataflows.runner import FlowThread
from memstream.schemas.enums import Level, Status
from memstream.schemas.tenants import UserKey
from models.llm.openai_compat import OpenAILLM
from sinks.kafka import KafkaBus
from tests.helpers.lifecycle import T0, record, seed
from tests.helpers.scripted_llm import scripted_server
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

CAPACITY = 20
APP = f"cons_{random.getrandbits(32):08x}"

SESSIONS = [
    [  # food
        "I love spicy ramen with extra garlic.",
        "I am allergic to shellfish.",
        "I bake sourdough bread every weekend.",
        "I drink two cups of green tea each morning.",
        "I hate cilantro in my salad.",
        "I learned to make dumplings from my grandmother.",
        "I prefer dark chocolate over milk chocolate.",
        "I am trying a vegetarian diet this month.",
        "I grow basil and mint on my balcony.",
        "I ordered pizza from Luigi's last Friday.",
    ],
    [  # work
        "I work as a data engineer at Acme Corp.",
        "I commute to the office by bicycle.",
        "I manage a team of five analysts.",
        "I use Python and SQL every day.",
        "I have a performance review in March.",
        "I started my job in 2019.",
        "I work from home on Wednesdays.",
        "I am learning Rust for a new project.",
        "I attended a conference in Berlin last year.",
        "I want to become a tech lead.",
    ],
    [  # family
        "I have two daughters named Mia and Lena.",
        "I married my husband Tom in 2015.",
        "I call my mother every Sunday.",
        "I have a brother who lives in Canada.",
        "I take my kids to swimming lessons on Saturdays.",
        "I celebrate my birthday on July 4th.",
        "I grew up in a small town near Porto.",
        "I visit my grandparents every Christmas.",
        "I have a cousin who is a doctor.",
        "I plan a family trip to Japan next spring.",
    ],
    [  # hobbies
        "I play the piano in a jazz band.",
        "I run five kilometres three times a week.",
        "I collect vintage postage stamps.",
        "I paint watercolor landscapes.",
        "I joined a chess club downtown.",
        "I read science fiction novels before bed.",
        "I go rock climbing at the local gym.",
        "I practice yoga on Tuesday evenings.",
        "I knit scarves for my friends.",
        "I build model airplanes.",
    ],
    [  # home
        "I have a golden retriever called Biscuit.",
        "I live in a two bedroom flat in Lisbon.",
        "I own a grey cat named Pixel.",
        "I recently painted my kitchen yellow.",
        "I drive an old blue Volvo.",
        "I water my tomato plants every evening.",
        "I am saving money to buy a house.",
        "I keep an aquarium with tropical fish.",
        "I bought a new sofa last month.",
        "I take Biscuit to the park every morning.",
    ],
    [  # travel and health
        "I went hiking in the Alps last summer.",
        "I want to visit Iceland to see the northern lights.",
        "I am afraid of flying.",
        "I speak Spanish and a little French.",
        "I wear glasses for reading.",
        "I sleep about seven hours a night.",
        "I broke my arm skiing in 2018.",
        "I see a dentist twice a year.",
        "I stayed in a hostel in Prague.",
        "I take vitamin D in the winter.",
    ],
]


BAKERIES = [f"I visited Zorvath{k:03d} and loved its bakery." for k in range(1, 19)]
FRIENDS = ("Priya", "Tomas", "Ana", "Keiko", "Omar", "Lena", "Ravi", "Mia", "Sven", "Noor",
           "Ines", "Yusuf")  # fmt: skip
POOLS = [f"I swam 20 laps at the Marlow pool with {f}." for f in FRIENDS]


def _told() -> list[list[str]]:
    """Six sessions of ten unrelated facts, each with three towns and two pool visits."""
    return [
        texts + BAKERIES[3 * n : 3 * n + 3] + POOLS[2 * n : 2 * n + 2]
        for n, texts in enumerate(SESSIONS)
    ]


@pytest.fixture(scope="module")
def small(settings, stores, runtime):
    """An ingest flow on its own topics whose runtime gives APP a capacity of 20.

    It shares the session's stores and hot cache, so the session's API recalls what it
    writes; its own stop event, so stopping it leaves the session's flows running.
    """
    prefix = f"cons{random.getrandbits(32):08x}."
    own = dataclasses.replace(
        stores,
        kafka=KafkaBus(settings.kafka_bootstrap, settings.kafka_partitions, 1, 3_600_000, prefix),
    )
    own.kafka.setup()
    own.kafka.ensure_topics()
    overrides = {"kafka_topic_prefix": prefix, "app_overrides": {APP: {"capacity_per_app": 20}}}
    rt = dataclasses.replace(
        runtime,
        settings=runtime.settings.model_copy(update=overrides),
        stores=own,
        stop=threading.Event(),
    )
    thread = FlowThread("ingest-consolidation", lambda: build_flow(rt), None, 1.0, stop=rt.stop)
    thread.start()
    thread.running.wait(30)
    yield rt
    thread.stop()


def _event(user_id: int, n: int, texts: list[str]) -> dict:
    task = f"cons-{user_id}-{n}"
    msgs = [{"role": "user", "content": t, "msg_id": f"{task}-m{i}"} for i, t in enumerate(texts)]
    return {
        "task_id": task,
        "user_id": user_id,
        "app_id": APP,
        "session_id": f"s{n}",
        "messages": msgs,
    }


def _changes(rt, user_id: int) -> list[tuple]:
    return rt.stores.clickhouse.query(
        "SELECT memory_id, op_type, reason, task_id FROM memstream.memory_changelog FINAL "
        "WHERE user_id = {u:UInt64}",
        {"u": user_id},
    )


def _recalled_msg_ids(api, user_id: int, query: str) -> set[str]:
    body = {"user_id": user_id, "query": query, "scope": {"app_id": APP}, "top_k": 10}
    resp = api.post("/memory/v1/recall", json=body).json()
    assert resp["code"] == 0, resp
    return {mid for m in resp["data"]["memories"] for mid in m["source"]["msg_ids"]}


def test_a_scope_told_three_times_its_capacity_compresses_and_keeps_every_source(
    small, api, user_id
) -> None:
    events = [_event(user_id, n, texts) for n, texts in enumerate(_told())]
    for e in events:
        small.stores.kafka.produce_json(
            small.stores.kafka.topic("memory.conversations"), str(user_id), e
        )
    small.stores.kafka.flush(15)
    for e in events:
        status = wait_for(
            lambda e=e: (
                (s := small.tasks.get(e["task_id"], tenant="default"))
                and s["status"] in ("done", "failed")
                and s
            ),
            timeout=120,
            what=e["task_id"],
        )
        assert status["status"] == "done", status

    everything = small.memories.load(user_id, tenant="default")
    active = [m for m in everything if m.status is Status.ACTIVE]
    assert 0 < len(active) <= CAPACITY
    assert all(m.app_id == APP and m.level is Level.APP for m in everything)
    bound = small.settings.consolidation_max_chars
    assert bound <= 320 and all(len(m.content) <= bound for m in everything)
    changes = _changes(small, user_id)
    ops = [c[1] for c in changes]
    assert ops.count("ADD") >= 3 * CAPACITY  # three times what the scope holds was said

    by_id = {m.memory_id: m for m in everything}
    merges = [c for c in changes if c[1] == "MERGE"]
    assert merges and all(c[0] in by_id for c in merges)  # each names a stored memory
    assert len({c[0] for c in merges}) == len(merges)  # one MERGE row per merge
    assert all("(frame)" in c[2] or "(same)" in c[2] for c in merges), merges
    members = [m for m in everything if m.status is Status.SUPERSEDED and m.superseded_by]
    merged_ids = {c[0] for c in merges}
    members = [m for m in members if m.superseded_by in merged_ids]
    assert members
    for merge_row in merges:
        merged = by_id[merge_row[0]]
        own = [m for m in members if m.superseded_by == merged.memory_id]
        assert len(own) >= 2 and all(m.memory_id in merge_row[2] for m in own)
        # a compression: shorter than its members together by a real margin
        assert len(merged.content) <= MARGIN * sum(len(m.content) for m in own)
        # about one thing: all towns or all pool visits, never a related statement joined
        topics = {("bakery" in m.content, "laps" in m.content) for m in own}
        assert topics in ({(True, False)}, {(False, True)}), [m.content for m in own]
        # sources kept, every member's names, numbers and dates findable in it
        for m in own:
            assert m.invalid_at is not None and set(m.msg_ids) <= set(merged.msg_ids)
            assert all(s in merged.content.casefold() for s in specifics(m.content))
        # the merged memory links every member's entities (docs/architecture.md#entities)
        linked = {x["entity_id"] for x in merged.entities}
        assert all({x["entity_id"] for x in m.entities} <= linked for m in own)

    # memory_entities follows: members SUPERSEDED, merged and held ones ACTIVE, evicted
    # ones ARCHIVED (paged out) or DELETED, each link as its memory's status
    rows = small.stores.clickhouse.query(
        "SELECT memory_id, entity_id, status FROM memstream.memory_entities FINAL "
        "WHERE user_id = {u:UInt64}",
        {"u": user_id},
    )
    assert rows
    want = {(m.memory_id, x["entity_id"]): str(m.status) for m in everything for x in m.entities}
    assert {(m, e): st for m, e, st in rows} == want
    assert {"SUPERSEDED", "ACTIVE"} <= set(want.values())

    # a merged memory that is still active is found by each of its members' turns
    turns = {msg["msg_id"]: msg["content"] for e in events for msg in e["messages"]}
    for merged in [m for m in active if m.memory_id in merged_ids]:
        for mid in merged.msg_ids[:4]:
            assert mid in _recalled_msg_ids(api, user_id, turns[mid]), turns[mid]

    # the history of a member shows the chain to its merged memory and the MERGE row
    member = members[0]
    hist = api.post(
        "/memory/v1/history", json={"user_id": user_id, "memory_id": member.memory_id}
    ).json()
    assert hist["code"] == 0, hist
    assert member.superseded_by in [r["memory_id"] for r in hist["data"]["chain"]]
    assert "MERGE" in [c["op_type"] for c in hist["data"]["changes"]]


def test_the_lifecycle_pass_merges_a_scope_above_the_high_water_mark(
    small, runtime, user_id
) -> None:
    # 18 of 20: above 80 %; five towns make one merge freeing 4 (18 → 14, 70 %)
    texts = [t.rstrip(".") for t in BAKERIES[:5] + SESSIONS[3][:7] + SESSIONS[4][:6]]
    records = [
        record(
            user_id,
            t,
            level=Level.APP,
            app_id=APP,
            source_session_id=f"s{i // 9}",
            source_msg_id=f"lc-{i}",
        )
        for i, t in enumerate(texts)
    ]
    seed(small, *records)
    calm = user_id + 1  # 16 of 20: not above the mark
    seed(small, *(record(calm, t, level=Level.APP, app_id=APP) for t in texts[:16]))
    assert crowded_users(small, [user_id, calm]) == [UserKey("default", user_id)]

    via = KafkaVia(small.stores, 60)
    summary = run_pass(small, T0, via, users=[user_id, calm])
    assert summary["failed_commands"] == 0, summary
    assert summary["consolidated"] >= 1
    assert summary["consolidated_members"] - summary["consolidated"] == 4  # 18 → 14 (70 %)
    assert (
        runtime.cache.peek(user_id, tenant="default") is None
    )  # a cold user was not loaded into the cache

    everything = small.memories.load(user_id, tenant="default")
    active = [m for m in everything if m.status is Status.ACTIVE]
    assert len(active) == 14
    assert {mid for m in active for mid in m.msg_ids} == {f"lc-{i}" for i in range(18)}
    (merged,) = [m for m in active if len(m.msg_ids) > 1]
    assert merged.content == (
        "I visited Zorvath001, Zorvath002, Zorvath003, Zorvath004 and Zorvath005 and loved "
        "its bakery"
    )
    merges = [c for c in _changes(small, user_id) if c[1] == "MERGE"]
    assert len(merges) == summary["consolidated"]
    assert all(c[3] == f"lifecycle@{T0.isoformat()}" for c in merges)
    assert len(small.memories.load(calm, statuses=[Status.ACTIVE], tenant="default")) == 16

    again = run_pass(small, T0, via, users=[user_id])
    assert again["consolidated"] == 0 and again["failed_commands"] == 0


def test_with_an_llm_the_merged_text_is_its_summary_and_a_failing_model_uses_the_plan(
    small, user_id
) -> None:
    # 18 of 20: three towns, three pool visits, twelve unrelated; 4 to free → two merges
    bakery = [t.rstrip(".") for t in BAKERIES[:3]]
    pools = [t.rstrip(".") for t in POOLS[:3]]
    others = [t.rstrip(".") for t in SESSIONS[0][:6] + SESSIONS[1][:6]]
    named = [("a", t) for t in bakery] + [("b", t) for t in pools] + [("c", t) for t in others]
    seed(
        small,
        *(
            record(
                user_id,
                t,
                memory_id=f"m_llm_{user_id}_{tag}{i:02d}",  # the towns' merge is asked first
                level=Level.APP,
                app_id=APP,
                source_session_id=f"s{i // 9}",
            )
            for i, (tag, t) in enumerate(named)
        ),
    )
    counted = _llm_counts()
    summary_text = "I visited Zorvath001, Zorvath002 and Zorvath003, loving each bakery"
    with scripted_server() as script:
        llm = OpenAILLM(script.url, model="scripted", timeout_s=5, max_retries=0, backoff_s=0)
        rt = dataclasses.replace(small, llm=llm)
        script.push_chat({"summary": summary_text})  # then only errors
        summary = run_pass(rt, T0, DirectVia(rt), users=[user_id])
    assert summary["failed_commands"] == 0 and summary["consolidated"] == 2, summary
    merges = {c[0]: c[2] for c in _changes(small, user_id) if c[1] == "MERGE"}
    merged = {
        m.memory_id: m
        for m in small.memories.load(user_id, tenant="default")
        if m.memory_id in merges
    }
    by_text = {m.content: m for m in merged.values()}
    assert set(by_text) == {
        summary_text,
        "I swam 20 laps at the Marlow pool with Priya, Tomas and Ana",  # the plan's text
    }
    assert "summarized by" in merges[by_text[summary_text].memory_id]
    planned = merges[
        by_text["I swam 20 laps at the Marlow pool with Priya, Tomas and Ana"].memory_id
    ]
    assert "(frame, LLMUnavailable" in planned
    # /metrics: one summary made, the other merge a failed call degraded to the plan
    moved = {k: v - counted[k] for k, v in _llm_counts().items()}
    assert moved["consolidations"] == 2 and moved["members"] == 6
    assert moved["ok"] == 1 and moved["error"] == moved["degraded"] == 1
    assert moved["unavailable"] == 1


def _llm_counts() -> dict[str, float]:
    from prometheus_client import REGISTRY

    def get(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    call = {"provider": "openai", "task": "summarize"}
    return {
        "consolidations": get("memstream_consolidations_total"),
        "members": get("memstream_consolidated_members_total"),
        "ok": get("memstream_llm_calls_total", **call, outcome="ok"),
        "error": get("memstream_llm_calls_total", **call, outcome="error"),
        "unavailable": get("memstream_llm_errors_total", **call, error="LLMUnavailable"),
        "degraded": get("memstream_llm_degraded_total", task="summarize"),
    }
