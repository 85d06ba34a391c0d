"""Session-wide real servers for the tests.

The test session starts its own Apache Kafka (KRaft) and Redis with the same code that
`memstream up` uses (ops.stack), on free loopback ports, in a temporary data dir, and
stops them at the end. chDB and Milvus Lite are embedded: one data dir each for the
whole pytest process (both lock their dir), so tests isolate by unique user ids,
topics and database names — never by reopening a store.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# the views' key matrix (``keys``, ``http``): a module's own fixtures of those names win
pytest_plugins = ["tests.helpers.key_matrix"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@dataclass
class Servers:
    data_dir: Path
    kafka_bootstrap: str
    redis_url: str


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    from ops import stack
    from ops.procs import free_port

    data_dir = Path(tempfile.mkdtemp(prefix="memstream-test-"))
    kafka_port, controller_port, redis_port = free_port(), free_port(), free_port()
    bootstrap = f"127.0.0.1:{kafka_port}"
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    try:
        stack.start_redis(data_dir, redis_url)
        stack.start_kafka(data_dir, bootstrap, partitions=2, controller_port=controller_port)
        yield Servers(data_dir, bootstrap, redis_url)
    finally:
        stack.stop(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def settings(servers: Servers):
    from core.settings import Settings

    return Settings(
        data_dir=servers.data_dir,
        kafka_bootstrap=servers.kafka_bootstrap,
        kafka_partitions=2,
        redis_url=servers.redis_url,
        clickhouse_url=f"chdb://{servers.data_dir / 'clickhouse'}",
        milvus_uri=str(servers.data_dir / "milvus" / "test.db"),
        log_json=False,
    )


@pytest.fixture(scope="session")
def stores(settings):
    from sinks.stores import Stores

    s = Stores.from_settings(settings)
    s.setup()
    s.kafka.ensure_topics()
    yield s
    s.close()


_ids = itertools.count(1)


@pytest.fixture
def user_id() -> int:
    """A user id no other test uses (random high bits + a counter)."""
    return (random.getrandbits(40) << 20) + next(_ids)


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    base = "".join(c if c.isalnum() else "_" for c in request.node.name)[:40]
    return f"{base}_{random.getrandbits(32):08x}"


@pytest.fixture(scope="session")
def embedder(settings):
    from models.factory import build_embedder

    return build_embedder(settings)


@pytest.fixture(scope="session")
def runtime(settings, stores, embedder):
    from dataflows.runtime import Runtime

    return Runtime.build(settings, stores, embedder=embedder)


@pytest.fixture(scope="session")
def ingest(runtime):
    """The ingest flow running in a thread on the session's topics (no recovery store)."""
    from dataflows.ingest.flow import build_flow
    from dataflows.runner import FlowThread

    thread = FlowThread(
        "ingest-test",
        lambda: build_flow(runtime),
        data_dir=None,
        epoch_s=1.0,
        stop=runtime.stop,
        on_failure=runtime.cache.clear,
    )
    thread.start()
    thread.running.wait(30)
    yield thread
    thread.stop()


@pytest.fixture(scope="session")
def api(settings, stores, runtime):
    from tests.helpers.api_client import api_client

    with api_client(settings, stores, runtime) as client:
        yield client


@pytest.fixture(scope="session")
def lifecycle(runtime, ingest):
    """The lifecycle flow (memory.recall_hits → recall_hits commands) in a thread.

    Windows of 0.5 s instead of the default 5 s; the keyed writer of ``ingest`` applies
    the commands.
    """
    import dataclasses

    from dataflows.lifecycle.flow import build_flow
    from dataflows.runner import FlowThread

    rt = dataclasses.replace(
        runtime, settings=runtime.settings.model_copy(update={"recall_hits_window_s": 0.5})
    )
    thread = FlowThread(
        "lifecycle-test", lambda: build_flow(rt), data_dir=None, epoch_s=1.0, stop=runtime.stop
    )
    thread.start()
    thread.running.wait(30)
    yield thread
    thread.stop()
