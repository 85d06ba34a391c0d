"""GET /admin/v1/stats: the node's own account of its memory, on the real embedded store."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from recall_api.errors import install_error_handlers
from recall_api.routes import admin
from recall_api.state import ApiState, install
from sinks.change_events import milvus_row
from sinks.milvus import MilvusStore
from tests.helpers.lifecycle import record

pytestmark = pytest.mark.integration


def test_the_engine_reports_its_memory_caches_and_threads(stores) -> None:
    stats = stores.clickhouse.engine_stats()
    assert stats["MemoryTracking"] > 0 and stats["GlobalThread"] > 0
    assert "MarkCacheBytes" in stats and "UncompressedCacheBytes" in stats
    # embedded: chDB's own jemalloc, apart from the process's malloc
    assert stats["jemalloc_resident"] >= stats["jemalloc_allocated"] > 0


def test_a_loopback_admin_reads_the_process_heap_and_the_engine(settings, stores) -> None:
    app = FastAPI()
    install(app, ApiState.build(settings, stores))
    install_error_handlers(app)
    app.include_router(admin.router)
    body = TestClient(app, client=("127.0.0.1", 40000)).get("/admin/v1/stats").json()
    assert body["code"] == 0
    python = body["data"]["python"]
    assert python["allocated_blocks"] > 0 and python["gc_objects"] > 0
    assert len(python["gc_counts"]) == 3 and python["malloc"]["in_use_bytes"] > 0
    assert "arrow" in python  # Milvus Lite's pool, when pyarrow is loaded
    ob = python["obmalloc"]  # pymalloc's arenas, 1 MiB each, holding its used and free blocks
    assert 0 < ob["arenas"] <= ob["arenas_highwater"]
    assert 0 < ob["in_use_bytes"] + ob["free_bytes"] <= ob["arenas"] * 2**20
    assert body["data"]["clickhouse"]["GlobalThread"] > 0
    assert body["data"]["milvus"]["segments"] >= 0  # embedded Milvus Lite's own account
    caches = body["data"]["lru_caches"]  # bounded memo tables: entries up to their max
    assert caches and all(0 <= c["entries"] <= c["max"] for c in caches.values())
    refused = TestClient(app, client=("10.1.2.3", 40000)).get("/admin/v1/stats")
    assert refused.json()["code"] == 40101


def test_embedded_milvus_reports_live_and_dead_rows(settings, tmp_path) -> None:
    """What the soak reads to tell Milvus Lite's growth from ours: an update or a delete
    leaves the old row in its flushed segment, behind a tombstone, until a compaction."""
    store = MilvusStore(str(tmp_path / "stats.db"), "stats", settings.embedding_dim)
    store.setup()
    try:
        rng = np.random.default_rng(0)
        ms = [record(7, f"fact {i}") for i in range(3)]
        vec = lambda: rng.standard_normal(settings.embedding_dim).astype(np.float32)  # noqa: E731
        store.upsert([milvus_row(m, vec()) for m in ms])
        store.client.flush(store.collection)
        stats = store.engine_stats()
        assert (stats["rows"], stats["segment_rows"], stats["memtable_rows"]) == (3, 3, 0)
        assert stats["segment_vector_bytes"] == 3 * settings.embedding_dim * 4
        assert stats["segment_arrow_bytes"] > 0

        store.upsert([milvus_row(ms[0], vec())])  # a new version of the first
        store.delete([ms[1].memory_id])
        assert store.engine_stats()["memtable_rows"] == 1  # not flushed yet
        store.client.flush(store.collection)
        stats = store.engine_stats()
        assert stats["rows"] == 2
        assert stats["segment_rows"] == 4  # the old first and the deleted second still held
        assert stats["tombstones"] >= 1
    finally:
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(str(tmp_path / "stats.db"))


def test_a_milvus_server_reports_nothing_it_cannot_see() -> None:
    assert MilvusStore("http://127.0.0.1:1", "c", 8).engine_stats() == {}
