"""Evolution through real Kafka: two ADDs of one answer, and an archived fact said again."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from dataflows.ingest.flow import build_flow
from dataflows.lifecycle.scan import run_pass
from dataflows.lifecycle.submit import KafkaVia
from dataflows.runner import FlowThread
from dataflows.runtime import Runtime
from memstream.schemas.enums import Status
from models.llm.openai_compat import OpenAILLM
from sinks.kafka import KafkaBus
from tests.helpers.scripted_llm import scripted_server
from tests.helpers.waiting import wait_for
from tests.integration.test_ingest_kafka import _done, _event
from tests.integration.test_ingest_kafka import _produce as _produce_default

pytestmark = pytest.mark.integration


def _produce(bus: KafkaBus, events: list[dict]) -> None:
    for e in events:
        bus.produce_json(bus.topic("memory.conversations"), str(e["user_id"]), e)
    bus.flush(15)


@pytest.fixture
def llm_ingest(settings, stores, embedder, unique_name):
    """An ingest flow whose LLM is a scripted OpenAI-compatible server, on its own topics
    (a prefix), so the session's rules flow never sees these conversations."""
    with scripted_server() as script:
        prefix = f"{unique_name}."
        own = dataclasses.replace(
            stores,
            kafka=KafkaBus(
                settings.kafka_bootstrap, settings.kafka_partitions, 1, 3_600_000, prefix
            ),
        )
        own.kafka.setup()
        own.kafka.ensure_topics()
        llm = OpenAILLM(script.url, model="scripted", timeout_s=5, max_retries=0)
        rt = Runtime.build(
            settings.model_copy(update={"kafka_topic_prefix": prefix}), own, embedder, llm
        )
        thread = FlowThread(
            f"ingest-{unique_name}", lambda: build_flow(rt), None, epoch_s=1.0, stop=rt.stop
        )
        thread.start()
        thread.running.wait(30)
        try:
            yield rt, script
        finally:
            thread.stop()


def test_two_adds_in_one_answer_are_two_memories(llm_ingest, user_id) -> None:
    rt, script = llm_ingest
    script.push_chat({"facts": [{"text": "Plays the cello", "source": 0}]})
    _produce(rt.stores.kafka, [_event(user_id, f"a1-{user_id}", "I play the cello")])
    assert wait_for(lambda: _done(rt, f"a1-{user_id}"))["status"] == "done"

    # The earlier turn of the session comes first as context: this turn is [1].
    script.push_chat(
        {"facts": [{"text": "Plays the cello and the viola in an orchestra", "source": 1}]}
    )
    script.push_chat(
        {
            "decisions": [
                {"event": "ADD", "id": None, "text": "Plays the viola"},
                {"event": "ADD", "id": None, "text": "Plays in an orchestra"},
                {"event": "NONE", "id": "0", "text": None},
            ]
        }
    )
    _produce(
        rt.stores.kafka,
        [_event(user_id, f"a2-{user_id}", "I play the cello and the viola in an orchestra")],
    )
    status = wait_for(lambda: _done(rt, f"a2-{user_id}"))
    assert status["status"] == "done" and status["counts"]["added"] == 2, status
    active = rt.memories.load(user_id, statuses=[Status.ACTIVE], tenant="default")
    assert sorted(m.content for m in active) == [
        "Plays in an orchestra",
        "Plays the cello",
        "Plays the viola",
    ]
    assert len({m.memory_id for m in active}) == 3


def test_an_archived_fact_said_again_is_restored_not_stored_twice(
    runtime, ingest, servers, user_id
) -> None:
    text = "I keep three beehives behind the old barn."
    _produce_default(servers.kafka_bootstrap, [_event(user_id, f"b1-{user_id}", text)])
    assert wait_for(lambda: _done(runtime, f"b1-{user_id}"))["status"] == "done"
    (first,) = runtime.memories.load(user_id, statuses=[Status.ACTIVE], tenant="default")

    later = datetime.now(UTC) + timedelta(days=100)  # decayed below 0.10 by then
    summary = run_pass(runtime, later, KafkaVia(runtime.stores, 30), users=[user_id])
    assert summary["archived"] == 1
    assert (
        runtime.memories.get(user_id, first.memory_id, tenant="default").status is Status.ARCHIVED
    )

    _produce_default(servers.kafka_bootstrap, [_event(user_id, f"b2-{user_id}", text)])
    status = wait_for(lambda: _done(runtime, f"b2-{user_id}"))
    assert status["status"] == "done" and status["counts"]["added"] == 0, status
    assert status["counts"]["updated"] == 1
    everything = runtime.memories.load(user_id, tenant="default")
    assert [m.memory_id for m in everything] == [first.memory_id]  # one memory, not two
    back = everything[0]
    assert back.status is Status.ACTIVE and back.archived_at is None
    assert back.weight == pytest.approx(first.weight)  # the type's initial weight again
    assert back.msg_ids == [f"b1-{user_id}-m0", f"b2-{user_id}-m0"]
    assert first.memory_id in runtime.cache.get(user_id, tenant="default")
    ops = runtime.stores.clickhouse.query(
        "SELECT op_type FROM memstream.memory_changelog FINAL WHERE memory_id = {m:String}",
        {"m": first.memory_id},
    )
    # (no order: the archive is stamped with the pass's clock, 100 days ahead)
    assert sorted(o for (o,) in ops) == ["ADD", "ARCHIVE", "RESTORE"]


def test_an_llms_typed_entities_are_linked_and_a_declared_type_kept(llm_ingest, user_id) -> None:
    """The extraction answer's entities, typed, go through the production adapter to the
    stored links; a type the rules cannot recognise ("dish") is the LLM's to keep."""
    rt, script = llm_ingest
    fact = {"text": "Cooks Ratatouille for her sister Anna", "source": 0, "entities": [
        {"name": "Ratatouille", "type": "dish"},
        {"name": "Anna", "type": "person", "relation": "sister"},
    ]}  # fmt: skip
    script.push_chat({"facts": [fact]})
    event = _event(user_id, f"ent-{user_id}", "I cook ratatouille for my sister Anna")
    event["strategy"] = {"entity_types": ["dish", "person"]}
    _produce(rt.stores.kafka, [event])
    status = wait_for(lambda: _done(rt, f"ent-{user_id}"))
    assert status["status"] == "done" and status["warnings"] == [], status
    (mem,) = rt.memories.load(user_id, statuses=[Status.ACTIVE], tenant="default")
    assert [(x["name"], x["type"]) for x in mem.entities] == [
        ("Ratatouille", "dish"), ("Anna", "person"),
    ]  # fmt: skip
    sent = script.requests[-1]["json"]["messages"][0]["content"]
    assert '"entities"' in sent and "(dish, person)" in sent
