"""A throw-away local stack for benchmarks: Kafka and Redis on free ports, stores in a
temporary data dir, one Runtime — the same parts the node runs, none of a user's data.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import tracing
from core.settings import Settings
from dataflows.runtime import Runtime, open_runtime
from ops import stack
from ops.procs import free_port
from sinks.stores import Stores


@dataclass
class BenchStack:
    settings: Settings
    stores: Stores
    runtime: Runtime
    data_dir: Path
    traces: bool = False  # otel_endpoint set: spans exported while the bench ran


@contextlib.contextmanager
def bench_stack(base: Settings, keep: bool = False, **overrides: Any) -> Iterator[BenchStack]:
    data_dir = Path(tempfile.mkdtemp(prefix="memstream-bench-"))
    bootstrap = f"127.0.0.1:{free_port()}"
    redis_url = f"redis://127.0.0.1:{free_port()}/0"
    try:
        stack.start_redis(data_dir, redis_url)
        stack.start_kafka(  # the controller on a port of its own: port + 1 may be taken
            data_dir, bootstrap, partitions=base.kafka_partitions, controller_port=free_port()
        )
        settings = base.model_copy(
            update={
                "data_dir": data_dir,
                "kafka_bootstrap": bootstrap,
                "redis_url": redis_url,
                "clickhouse_url": f"chdb://{data_dir / 'clickhouse'}",
                "milvus_uri": str(data_dir / "milvus" / "bench.db"),
                "kafka_topic_prefix": "",
                "kafka_security_protocol": "PLAINTEXT",  # the private broker above
                **overrides,
            }
        )
        # traces on when otel_endpoint is set, as in the node: the bench then measures their cost
        traced = tracing.setup(settings, "memstream-bench")
        try:
            with open_runtime(settings, topics=True, follow=False) as rt:  # closed before the stack
                yield BenchStack(settings, rt.stores, rt, data_dir, traced)
        finally:
            if traced:
                tracing.install(None)  # flushes what the bench traced
    finally:
        stack.stop(data_dir)
        if not keep:
            shutil.rmtree(data_dir, ignore_errors=True)


def percentiles(values: list[float], points: tuple[int, ...] = (50, 95, 99)) -> dict[str, float]:
    """Nearest-rank percentiles (same definition for every bench)."""
    if not values:
        return {f"p{p}": float("nan") for p in points}
    ordered = sorted(values)
    out = {}
    for p in points:
        rank = max(1, -(-p * len(ordered) // 100))  # ceil(p·n/100)
        out[f"p{p}"] = ordered[rank - 1]
    return out


def rate_series(times: list[float], start: float, width_s: float = 1.0) -> list[list[float]]:
    """Events per second over time: ``[[t_s, rate], ...]``, one point per ``width_s``
    window from ``start`` (the times' clock) to the last event, empty windows included."""
    if not times or width_s <= 0:
        return []
    bins = [0] * (int((max(times) - start) // width_s) + 1)
    for t in times:
        if t >= start:
            bins[int((t - start) // width_s)] += 1
    return [[round(i * width_s, 2), round(n / width_s, 2)] for i, n in enumerate(bins)]
