"""Reconcile (ClickHouse ↔ Milvus ↔ hot cache) and the direct applier of the CLI."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import numpy as np
import pytest

from core.write_batch import WriteBatch
from dataflows.lifecycle.scan import run_pass
from dataflows.lifecycle.submit import DirectVia, KafkaVia
from memstream.schemas.enums import Status
from ops.lifecycle_cmd import run_direct
from sinks.change_events import milvus_row
from sinks.memory_store import RECONCILE_KEY
from tests.helpers.lifecycle import T0, record, seed

pytestmark = pytest.mark.integration


def _reconciled(runtime, user_id: int) -> dict:
    via = KafkaVia(runtime.stores, 30)
    summary = run_pass(runtime, T0, via, users=[user_id], reconcile_grace_s=0)
    return summary["reconciled"]


def test_a_vector_deleted_behind_our_back_is_re_embedded(runtime, ingest, user_id) -> None:
    (m,) = seed(runtime, record(user_id, "I play the cello in an orchestra"))
    runtime.stores.milvus.delete([m.memory_id])
    assert runtime.stores.milvus.get([m.memory_id], ["memory_id"]) == []

    assert _reconciled(runtime, user_id)["missing_vectors"] == 1
    (row,) = runtime.stores.milvus.get([m.memory_id], ["vector", "status", "user_id"])
    assert row["status"] == "ACTIVE" and row["user_id"] == str(user_id)
    want = runtime.embedder.embed([m.content])[0]
    got = np.asarray(row["vector"], dtype=np.float32)
    assert float(got @ want / np.linalg.norm(got) / np.linalg.norm(want)) > 0.999
    assert m.memory_id in runtime.cache.get(
        user_id, tenant="default"
    )  # the reloaded index has it again
    assert _reconciled(runtime, user_id)["missing_vectors"] == 0


def test_an_orphan_vector_is_removed(runtime, ingest, user_id) -> None:
    ghost = record(user_id, "I was never written to ClickHouse")
    vector = runtime.embedder.embed([ghost.content])[0]
    runtime.stores.milvus.upsert([milvus_row(ghost, vector)])
    assert runtime.stores.milvus.get([ghost.memory_id], ["memory_id"])

    assert _reconciled(runtime, user_id)["orphans"] == 1
    assert runtime.stores.milvus.get([ghost.memory_id], ["memory_id"]) == []


def test_the_pending_queue_and_status_drift_are_repaired(runtime, ingest, user_id) -> None:
    (m,) = seed(runtime, record(user_id, "I keep bees"))
    stale = milvus_row(m, None) | {"status": "DELETED"}  # a partial write that went wrong
    runtime.stores.milvus.client.upsert(
        runtime.stores.milvus.collection, [stale], partial_update=True
    )
    nowhere = f"m_nowhere_{user_id}"
    runtime.stores.redis.client.sadd(RECONCILE_KEY, m.memory_id, nowhere)

    fixed = _reconciled(runtime, user_id)
    assert fixed["status_fixed"] == 1 and fixed["pending"] == 2
    assert runtime.stores.milvus.get([m.memory_id], ["status"])[0]["status"] == "ACTIVE"
    members = runtime.stores.redis.client.smembers(RECONCILE_KEY)
    assert m.memory_id not in members and nowhere not in members


def test_a_hot_index_that_drifted_is_dropped_and_reloaded(runtime, ingest, user_id) -> None:
    (m,) = seed(runtime, record(user_id, "I collect vinyl records"))
    idx = runtime.cache.get(user_id, tenant="default")
    with idx.lock:
        idx.remove(m.memory_id)  # the counters derived from it would now be one short

    fixed = _reconciled(runtime, user_id)
    assert fixed["cache_drift"] == 1 and fixed["caches_invalidated"] == 1
    assert m.memory_id in runtime.cache.get(user_id, tenant="default")


def test_the_direct_applier_runs_the_same_handlers(runtime, user_id) -> None:
    normal, gone = seed(
        runtime,
        record(user_id, "I drink oat milk"),
        record(user_id, "My old phone number", status=Status.DELETED, deleted_at=T0),
    )
    summary = run_pass(runtime, T0 + timedelta(days=91), DirectVia(runtime), users=[user_id])
    assert (summary["archived"], summary["purged"], summary["failed_commands"]) == (1, 1, 0)
    assert (
        runtime.memories.get(user_id, normal.memory_id, tenant="default").status is Status.ARCHIVED
    )
    assert runtime.memories.get(user_id, gone.memory_id, tenant="default") is None


def test_the_cli_runs_a_pass_in_process_when_no_node_runs(runtime, settings, user_id) -> None:
    m, lost = seed(
        runtime,
        record(user_id, "I sail on weekends"),
        record(user_id, "I knit", weight_at=T0 + timedelta(days=80)),
    )
    runtime.stores.milvus.delete([lost.memory_id])
    # Written < 30 s ago: within the default grace a missing vector is not yet suspect.
    summary = run_direct(settings, T0 + timedelta(days=91), [user_id])
    assert summary["archived"] == 1 and summary["users"] == 1
    assert summary["reconciled"]["missing_vectors"] == 0
    assert runtime.memories.get(user_id, m.memory_id, tenant="default").status is Status.ARCHIVED
    assert runtime.stores.milvus.get([lost.memory_id], ["memory_id"]) == []

    # Past the grace it is repaired, with the CLI's own (lazily loaded) model.
    summary = run_direct(settings, T0 + timedelta(days=91), [user_id], reconcile_grace_s=0)
    assert summary["reconciled"]["missing_vectors"] == 1
    (row,) = runtime.stores.milvus.get([lost.memory_id], ["vector", "status"])
    assert row["status"] == "ACTIVE"
    want = runtime.embedder.embed([lost.content])[0]
    got = np.asarray(row["vector"], dtype=np.float32)
    assert float(got @ want / np.linalg.norm(got) / np.linalg.norm(want)) > 0.999


def test_a_write_racing_a_purge_writes_the_rows_milvus_still_holds(runtime, ingest, user_id):
    """A status change that reaches Milvus after a purge deleted the row: the rows still
    there are written, the purged one is not brought back without a vector, and a live
    one whose vector is missing goes to the reconcile queue (re-embedded there)."""
    kept, purged, live = seed(
        runtime,
        record(user_id, "I keep bees"),
        record(user_id, "I sail"),
        record(user_id, "I knit"),
    )
    mv, redis = runtime.stores.milvus, runtime.stores.redis.client
    mv.delete([purged.memory_id, live.memory_id])  # the purge got there first
    redis.srem(RECONCILE_KEY, kept.memory_id, purged.memory_id, live.memory_id)
    runtime.memories.write(
        WriteBatch(
            memories=[
                dataclasses.replace(kept, status=Status.ARCHIVED),
                dataclasses.replace(purged, status=Status.DELETED, content=""),
                dataclasses.replace(live, is_important=True),
            ]
        )
    )
    (row,) = mv.get([kept.memory_id], ["status"])
    assert row["status"] == "ARCHIVED"
    assert mv.get([purged.memory_id, live.memory_id], ["memory_id"]) == []
    queued = redis.smembers(RECONCILE_KEY)
    assert live.memory_id in queued and purged.memory_id not in queued
    assert kept.memory_id not in queued
