"""The same MilvusStore code against a Milvus *server* URL (http://), not the embedded file.

`milvus-lite server` speaks the Milvus gRPC protocol that a standalone Milvus speaks, so
this covers the path a distributed deployment takes (MEMSTREAM_MILVUS_URI=http://…).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ops.procs import free_port, port_open
from sinks.milvus import MilvusStore
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def milvus_server(tmp_path: Path):
    port = free_port()
    exe = Path(sys.executable).with_name("milvus-lite")
    proc = subprocess.Popen(
        [
            str(exe),
            "server",
            "--data-dir",
            str(tmp_path / "mv"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: port_open("127.0.0.1", port), timeout=60, what="milvus-lite server")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def test_store_code_takes_a_server_url(milvus_server: str) -> None:
    store = MilvusStore(milvus_server, "memories", dim=8)
    store.setup()
    assert not store.embedded and store.ping()
    base = dict(
        app_id="",
        session_id="",
        level="GLOBAL",
        ownership="USER",
        mem_type="SEMANTIC",
        status="ACTIVE",
        is_important=False,
        tags={},
        valid_at=0,
        invalid_at=0,
    )
    store.upsert(
        [
            {**base, "memory_id": "a", "user_id": "1", "vector": [1.0] + [0.0] * 7},
            {**base, "memory_id": "b", "user_id": "2", "vector": [1.0] + [0.0] * 7},
        ]
    )
    hits = store.search([[1.0] + [0.0] * 7], 'user_id == "1"', limit=5)[0]
    assert [h["memory_id"] for h in hits] == ["a"]
    store.close()
    again = MilvusStore(milvus_server, "memories", dim=8)
    again.setup()  # idempotent against an existing collection
    assert [r["memory_id"] for r in again.get(["a"])] == ["a"]
    again.close()
