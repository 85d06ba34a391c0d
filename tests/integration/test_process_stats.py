"""GET /admin/v1/stats: the node's own account of its memory, on the real embedded store."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from recall_api.errors import install_error_handlers
from recall_api.routes import admin

pytestmark = pytest.mark.integration


def test_the_engine_reports_its_memory_caches_and_threads(stores) -> None:
    stats = stores.clickhouse.engine_stats()
    assert stats["MemoryTracking"] > 0 and stats["GlobalThread"] > 0
    assert "MarkCacheBytes" in stats and "UncompressedCacheBytes" in stats
    # embedded: chDB's own jemalloc, apart from the process's malloc
    assert stats["jemalloc_resident"] >= stats["jemalloc_allocated"] > 0


def test_a_loopback_admin_reads_the_process_heap_and_the_engine(settings, stores) -> None:
    app = FastAPI()
    app.state.settings = settings
    app.state.stores = stores
    app.state.services = None
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
    refused = TestClient(app, client=("10.1.2.3", 40000)).get("/admin/v1/stats")
    assert refused.json()["code"] == 40101
