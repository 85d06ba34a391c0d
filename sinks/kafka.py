"""Kafka: topic administration and the shared producer (docs/architecture.md#kafka-topics).

Topics are created idempotently with the configured partition count; the retention and
``segment.ms`` of ``memory.conversations`` and ``memory.dlq`` keep every record within the
purge deadline (``sinks.topic_config``), so raw transcripts never outlive a deletion
promise. Keys are the user_id as a decimal string. A flow's source waits for its topics'
partitions before it lists them (``wait_for_topics``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
    TopicMetadata,
)

from core.settings import Settings
from memstream.schemas.events import ALL_TOPICS, topic
from sinks.errors import StoreUnavailable, TopicsNotReady
from sinks.kafka_config import ConfValue, KafkaConf, kafka_security_config
from sinks.topic_config import PLAINTEXT_TOPICS, topic_config

log = logging.getLogger(__name__)


class KafkaBus:
    """Admin (topics, health) and one idempotent producer for the process."""

    def __init__(
        self,
        bootstrap: str,
        partitions: int = 8,
        replication: int = 1,
        conversations_retention_ms: int = 24 * 3600 * 1000,
        topic_prefix: str = "",
        security: Mapping[str, str] | None = None,
    ):
        self.bootstrap = bootstrap
        self.partitions = partitions
        self.replication = replication
        self.retention_ms = conversations_retention_ms
        self.prefix = topic_prefix
        self.security = dict(security or {})  # TLS / SASL keys (sinks.kafka_config)
        self._admin: AdminClient | None = None
        self._producer: Producer | None = None

    @classmethod
    def from_settings(cls, s: Settings) -> KafkaBus:
        return cls(
            s.kafka_bootstrap,
            s.kafka_partitions,
            s.kafka_replication,
            int(s.conversations_retention_h * 3600 * 1000),
            s.kafka_topic_prefix,
            security=kafka_security_config(s),
        )

    def client_config(self, extra: Mapping[str, ConfValue] | None = None) -> KafkaConf:
        """The config of any client of this bus: bootstrap, security, then ``extra``."""
        return {"bootstrap.servers": self.bootstrap, **self.security, **(extra or {})}

    def _base_conf(self) -> KafkaConf:
        return self.client_config({"socket.timeout.ms": 5000})

    def setup(self) -> None:
        self._admin = AdminClient(self._base_conf())
        self._producer = Producer(
            {
                **self._base_conf(),
                "enable.idempotence": True,
                "acks": "all",  # an add answers accepted once every in-sync replica has it
                "linger.ms": 2,
                "compression.type": "lz4",
                "message.timeout.ms": 30000,
                "message.max.bytes": 8 * 1024 * 1024,
            }
        )

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            raise StoreUnavailable("kafka: setup() was not called")
        return self._admin

    @property
    def producer(self) -> Producer:
        if self._producer is None:
            raise StoreUnavailable("kafka: setup() was not called")
        return self._producer

    def ping(self, timeout: float = 1.0) -> bool:
        try:
            md = self.admin.list_topics(timeout=timeout)
            return bool(md.brokers)
        except KafkaException:
            return False

    def ensure_topics(self, timeout: float = 15.0) -> list[str]:
        """Create the missing topics (docs/architecture.md#kafka-topics); return the names
        created."""
        try:
            existing = set(self.admin.list_topics(timeout=timeout).topics)
        except KafkaException as exc:
            raise StoreUnavailable(f"kafka: {self.bootstrap} did not answer: {exc}") from exc
        self._correct_configs(existing, timeout)
        wanted = []
        for base in ALL_TOPICS:
            name = self.topic(base)
            if name in existing:
                continue
            config = topic_config(base, self.retention_ms)
            wanted.append(
                NewTopic(
                    name,
                    num_partitions=self.partitions,
                    replication_factor=self.replication,
                    config=config,
                )
            )
        if not wanted:
            return []
        created = []
        for name, fut in self.admin.create_topics(wanted, operation_timeout=timeout).items():
            try:
                fut.result(timeout)
                created.append(name)
            except KafkaException as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise StoreUnavailable(f"kafka: cannot create {name}: {exc}") from exc
        if created:
            log.info("created topics", extra={"fields": {"topics": created}})
        return created

    def _correct_configs(self, existing: set[str], timeout: float) -> None:
        """Existing plaintext topics get the deadline configs too (sinks.topic_config)."""
        resources = [
            ConfigResource(
                ResourceType.TOPIC,
                self.topic(base),
                incremental_configs=[
                    ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                    for k, v in topic_config(base, self.retention_ms).items()
                ],
            )
            for base in PLAINTEXT_TOPICS
            if self.topic(base) in existing
        ]
        if not resources:
            return
        for res, fut in self.admin.incremental_alter_configs(resources).items():
            try:
                fut.result(timeout)
            except KafkaException as exc:  # e.g. no AlterConfigs ACL: say so, keep running
                log.error(
                    "cannot set the purge-deadline configs of a topic; set them by hand",
                    extra={"fields": {"topic": res.name, "error": str(exc)[:300]}},
                )

    def topic(self, base: str) -> str:
        return topic(self.prefix, base)

    def produce_json(
        self,
        topic: str,
        key: str,
        value: object,
        headers: dict | None = None,
        on_delivery: Callable[[KafkaError | None, Message], None] | None = None,
    ) -> None:
        """Queue one JSON message; a local queue still full after a 1 s drain is unavailable."""
        payload = (
            value
            if isinstance(value, bytes)
            else json.dumps(value, ensure_ascii=False, default=str).encode()
        )
        for attempt in range(2):
            try:
                self.producer.produce(
                    topic,
                    key=key.encode(),
                    value=payload,
                    headers=list((headers or {}).items()),
                    on_delivery=on_delivery,
                )
                break
            except BufferError as exc:
                if attempt:
                    raise StoreUnavailable("kafka: local producer queue is full") from exc
                self.producer.poll(1.0)  # back-pressure: let deliveries drain, then retry
        self.producer.poll(0)

    def flush(self, timeout: float = 10.0) -> int:
        return self.producer.flush(timeout) if self._producer is not None else 0

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(5)
        self._producer = None
        self._admin = None


def wait_for_topics(
    config: Mapping[str, ConfValue],
    topics: Iterable[str],
    timeout: float = 30.0,
    stop: threading.Event | None = None,
) -> None:
    """Return once the broker's metadata gives each of ``topics`` its partitions, each
    with a leader; raise TopicsNotReady after ``timeout`` seconds.

    Right after CreateTopics (or while the node's ensure-topics thread still retries) a
    topic's metadata says UNKNOWN_TOPIC_OR_PART (or LEADER_NOT_AVAILABLE), and Bytewax's
    KafkaSource.list_parts raises on that. All topics are listed, never one by name: a metadata request naming
    a topic lets a broker with auto-create make it, without the configs of ensure_topics.
    Returns at once, unchecked, when ``stop`` is set.
    """
    wanted = list(topics)
    admin = AdminClient({**config, "socket.timeout.ms": 5000})
    started = time.monotonic()
    deadline = started + timeout
    waited = False
    while stop is None or not stop.is_set():
        try:
            md = admin.list_topics(timeout=min(max(deadline - time.monotonic(), 0.5), 5.0))
            states = {t: _not_ready(md.topics.get(t)) for t in wanted}
        except KafkaException:
            states = dict.fromkeys(wanted, "broker did not answer")
        pending = {t: why for t, why in states.items() if why is not None}
        if not pending:
            if waited:
                waited_s = round(time.monotonic() - started, 1)
                log.info(
                    "kafka topics ready", extra={"fields": {"topics": wanted, "waited_s": waited_s}}
                )
            return
        if time.monotonic() >= deadline:
            log.warning("kafka topics not ready", extra={"fields": {"topics": pending}})
            raise TopicsNotReady(
                f"kafka: topics not ready after {timeout:.0f}s: "
                + ", ".join(f"{t} ({why})" for t, why in pending.items())
            )
        waited = True
        if stop is None:
            time.sleep(0.2)
        else:
            stop.wait(0.2)


def _not_ready(meta: TopicMetadata | None) -> str | None:
    """Why a topic's metadata cannot be listed into partitions yet; None when it can."""
    if meta is None:
        return "missing"
    if meta.error is not None:
        return meta.error.name()
    if not meta.partitions:
        return "no partitions"
    if any(p.leader < 0 for p in meta.partitions.values()):
        return "no leader"
    return None
