"""An API process apart from the writer: its caches follow `memory.changes` over Kafka.

"Process A" is an app with its own MemoryStore, hot cache and follower; "process B" is
the session runtime's writer (another origin) writing to the same real stores. Without
the follower A would keep serving the index it loaded first.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from core.write_batch import WriteBatch
from memstream.schemas.enums import Status
from recall_api.app import create_app
from recall_api.changes import follow_changes
from recall_api.state import api_state
from sinks.services import Services
from tests.helpers.waiting import wait_for
from tests.integration.test_recall_api import ids, recall, record, seed

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def process_a(settings, stores, embedder):
    services = Services.build(settings, stores, embedder=embedder)
    app = create_app(settings, stores, services)
    follower = follow_changes(
        api_state(app), services.cache, stores.kafka, services.memories.origin
    )
    assert follower.live.wait(30), "the follower never reached memory.changes"
    with TestClient(app) as client:
        yield client, services, follower
    follower.stop()


def recalled(client, user_id: int, query: str) -> list[str]:
    return ids(recall(client, user_id, query))


def test_adds_and_deletes_of_another_process_reach_this_processs_recall(
    process_a, runtime, user_id
):
    client, services, follower = process_a
    assert services.memories.origin != runtime.memories.origin
    (sister,) = seed(runtime, record(user_id, "My sister lives in Berlin"))
    assert sister.memory_id in recalled(client, user_id, "where does my sister live?")
    assert (
        services.cache.peek(user_id, tenant="default") is not None
    )  # A now holds the user's index

    (brother,) = seed(runtime, record(user_id, "My brother lives in Lisbon"))
    wait_for(
        lambda: brother.memory_id in recalled(client, user_id, "where does my brother live?"),
        what="B's new memory in A's recall",
    )
    deleted = dataclasses.replace(sister, status=Status.DELETED)
    runtime.memories.write(WriteBatch(memories=[deleted], milvus_deletes=[sister.memory_id]))
    wait_for(
        lambda: sister.memory_id not in recalled(client, user_id, "where does my sister live?"),
        what="B's delete in A's recall",
    )
    assert follower.invalidated >= 2


def test_weight_recovery_is_patched_in_place(process_a, runtime, user_id):
    client, services, follower = process_a
    (fact,) = seed(runtime, record(user_id, "I keep bees in the garden", weight=0.4))
    assert fact.memory_id in recalled(client, user_id, "do I keep bees?")
    held = services.cache.peek(user_id, tenant="default")
    refreshed = follower.refreshed
    # The recall above also sends a hit to the lifecycle flow, whose recovery is another
    # REFRESH stamped with the wall clock. This write is stamped later than any of those,
    # so whichever order they arrive in, the held copy ends up with this one.
    later = datetime.now(UTC) + timedelta(hours=1)
    recovered = dataclasses.replace(
        fact, weight=0.9, weight_at=later, last_recalled_at=later, recall_count=7
    )
    runtime.memories.write(WriteBatch(memories=[recovered]))  # no change row: a REFRESH
    wait_for(
        lambda: held.records[fact.memory_id].weight == pytest.approx(0.9),
        what="the REFRESH event patched into the held index",
    )
    assert follower.refreshed > refreshed
    assert services.cache.peek(user_id, tenant="default") is held  # patched, not reloaded
    assert held.records[fact.memory_id].recall_count == 7


def test_own_writes_are_not_applied_twice(process_a, user_id):
    client, services, follower = process_a
    skipped = follower.skipped_own
    (cello,) = seed(services, record(user_id, "I play the cello"))
    # A's own write reaches its cache through the in-process listener, at once.
    assert cello.memory_id in recalled(client, user_id, "what instrument do I play?")
    held = services.cache.peek(user_id, tenant="default")
    seed(services, record(user_id, "I play the violin too"))
    wait_for(lambda: follower.skipped_own >= skipped + 2, what="both of A's own events")
    assert services.cache.peek(user_id, tenant="default") is held  # not dropped by its own event


def test_a_change_of_another_tenants_user_drops_that_tenants_index_only(
    process_a, runtime, user_id
):
    _, services, _ = process_a
    seed(runtime, record(user_id, "I keep bees"))
    held = services.cache.get(user_id, tenant="default")
    other = services.cache.get(user_id, tenant="t2")
    (goats,) = seed(runtime, record(user_id, "I keep goats", tenant_id="t2"))
    wait_for(
        lambda: services.cache.peek(user_id, tenant="t2") is not other,
        what="t2's user dropped from A's cache",
    )
    assert services.cache.peek(user_id, tenant="default") is held  # same id, another person
    assert goats.memory_id in services.cache.get(user_id, tenant="t2")
    assert goats.memory_id not in services.cache.get(user_id, tenant="default")
