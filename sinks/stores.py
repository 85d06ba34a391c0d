"""All stores of one process, opened from settings, with one readiness check."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from core.settings import Settings
from sinks.clickhouse import ClickHouseStore
from sinks.kafka import KafkaBus
from sinks.milvus import MilvusStore
from sinks.redis_store import RedisStore

log = logging.getLogger(__name__)


@dataclass
class Stores:
    clickhouse: ClickHouseStore
    milvus: MilvusStore
    redis: RedisStore
    kafka: KafkaBus

    @classmethod
    def from_settings(cls, s: Settings) -> Stores:
        return cls(
            clickhouse=ClickHouseStore.from_settings(s),
            milvus=MilvusStore(
                s.milvus_target,
                s.milvus_collection,
                s.embedding_dim,
                s.milvus_token.get_secret_value(),
            ),
            redis=RedisStore(s.redis_url),
            kafka=KafkaBus.from_settings(s),
        )

    def setup(self) -> None:
        """Connect every store and apply the schema (idempotent). Topics: see ensure_topics."""
        self.clickhouse.setup()
        self.milvus.setup()
        self.redis.setup()
        self.kafka.setup()

    def check(self) -> dict[str, bool]:
        """Ask every backend at once; the slowest answer bounds the call (about 2 s)."""
        probes = {
            "kafka": self.kafka.ping,
            "redis": self.redis.ping,
            "clickhouse": self.clickhouse.ping,
            "milvus": self.milvus.ping,
        }
        with ThreadPoolExecutor(max_workers=len(probes)) as pool:
            futures = {name: pool.submit(fn) for name, fn in probes.items()}
            return {name: bool(f.result()) for name, f in futures.items()}

    def close(self) -> None:
        for store in (self.kafka, self.redis, self.milvus, self.clickhouse):
            try:
                store.close()
            except Exception:
                log.warning("close failed", exc_info=True)
