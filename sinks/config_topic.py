"""``memory.config`` on Kafka: publish a live change, read them all, follow them.

Each process runs one :class:`ConfigFollower`: a daemon thread that reads the compacted
topic from its beginning (no consumer group: every process sees every record), folds
each record over the settings the process started with (``core.live_config.LiveState``)
and swaps the new whole into the objects that hand settings to the hot paths (the
Runtime, the API's Services, the app state). Readers do one attribute read per request,
never a lock or a Kafka call; the swap is one attribute assignment. A record that is not
valid is logged with its reason and changes nothing.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Protocol

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import NewTopic

from core.live_config import Applied, ConfigKey, ConfigRecord, ConfigRefused, LiveState
from core.logs import log_fields
from core.settings import Settings
from memstream.schemas.events import TOPIC_CONFIG
from sinks.errors import StoreUnavailable
from sinks.kafka import KafkaBus
from sinks.topic_config import topic_config

log = logging.getLogger(__name__)
# librdkafka's own lines (a broker down: one per reconnect) go to logging, not stderr
KAFKA_LOG = logging.getLogger("memstream.kafka.config")

RawRecord = tuple[bytes | None, bytes | None]


class SettingsHolder(Protocol):
    """What keeps the live settings: its ``settings`` is swapped whole on each change."""

    settings: Settings


def ensure_config_topic(bus: KafkaBus, timeout: float = 10.0) -> None:
    """Create ``memory.config`` (compacted) when missing, before its first record: the
    CLI may run before any node; an operator's principal may see no other topic."""
    name = bus.topic(TOPIC_CONFIG)
    try:
        if name in bus.admin.list_topics(timeout=timeout).topics:
            return
        config = topic_config(TOPIC_CONFIG, bus.retention_ms)
        new = NewTopic(name, bus.partitions, bus.replication, config=config)
        fut = bus.admin.create_topics([new], operation_timeout=timeout)[name]
        fut.result(timeout)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise StoreUnavailable(f"kafka: cannot create {name}: {exc}") from exc


def publish(bus: KafkaBus, record: ConfigRecord, timeout: float = 10.0) -> None:
    """Write one change and wait for the broker's ack; StoreUnavailable if it gave none."""
    key, value = record.encode()
    errors: list[str] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            errors.append(str(err))

    bus.produce_json(bus.topic(TOPIC_CONFIG), key.decode(), value, on_delivery=delivered)
    if bus.flush(timeout) or errors:
        raise StoreUnavailable(
            f"kafka: {bus.topic(TOPIC_CONFIG)} did not take the change: "
            + (errors[0] if errors else f"no answer in {timeout:.0f}s")
        )


def _consumer(bus: KafkaBus) -> Consumer:
    conf = bus.client_config(
        {
            "group.id": f"memstream-config-{uuid.uuid4().hex[:8]}",  # never committed
            "enable.auto.commit": False,
            "socket.timeout.ms": 5000,
            "fetch.wait.max.ms": 500,  # answered at the first record: only idle asks wait
        }
    )
    return Consumer({**conf, "logger": KAFKA_LOG})


def _partitions(consumer: Consumer, name: str, timeout: float) -> list[int] | None:
    """The topic's partitions; None while it does not exist. All topics are listed, never
    one by name: naming it lets a broker with auto-create make it, uncompacted."""
    topic = consumer.list_topics(timeout=timeout).topics.get(name)
    if topic is None or topic.error is not None or not topic.partitions:
        return None
    return sorted(topic.partitions)


def _ends(consumer: Consumer, name: str, parts: list[int], timeout: float) -> dict[int, int]:
    """Per partition, the offset one past its last record now (only non-empty ones)."""
    out = {}
    for p in parts:
        low, high = consumer.get_watermark_offsets(TopicPartition(name, p), timeout=timeout)
        if high > low:
            out[p] = high
    return out


def read_all(bus: KafkaBus, timeout: float = 10.0) -> list[RawRecord]:
    """Every record the topic holds now, per partition in offset order (a missing topic:
    none yet). StoreUnavailable when the broker does not answer within ``timeout``."""
    name = bus.topic(TOPIC_CONFIG)
    consumer = _consumer(bus)
    try:
        parts = _partitions(consumer, name, timeout)
        if parts is None:
            return []
        ends = _ends(consumer, name, parts, timeout)
        if not ends:
            return []
        consumer.assign([TopicPartition(name, p, OFFSET_BEGINNING) for p in ends])
        out: list[RawRecord] = []
        pending = dict(ends)
        deadline = threading.Event()
        timer = threading.Timer(timeout, deadline.set)
        timer.start()
        try:
            while pending and not deadline.is_set():
                for msg in consumer.consume(num_messages=500, timeout=0.2):
                    if (err := msg.error()) is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            raise StoreUnavailable(f"kafka: {name}: {err}")
                        continue
                    out.append((msg.key(), msg.value()))
                    p = msg.partition()
                    offset = msg.offset()  # a consumed message has one (None: not consumed)
                    if p in pending and offset is not None and offset + 1 >= pending[p]:
                        del pending[p]
        finally:
            timer.cancel()
        if pending:
            raise StoreUnavailable(f"kafka: {name} not read to its end in {timeout:.0f}s")
        return out
    except KafkaException as exc:
        raise StoreUnavailable(f"kafka: {bus.bootstrap} did not answer: {exc}") from exc
    finally:
        consumer.close()


def fold(base: Settings, raw: list[RawRecord]) -> tuple[LiveState, list[Applied]]:
    """The live state ``raw`` makes on top of ``base``, and what each record did (a record
    that is not even decodable comes back as refused, with no settings)."""
    state = LiveState(base)
    results = []
    for key, value in raw:
        try:
            record = ConfigRecord.decode(key, value)
        except ConfigRefused as exc:
            results.append(_undecodable(key, str(exc)))
            continue
        results.append(state.apply(record))
    return state, results


def _undecodable(key: bytes | None, reason: str) -> Applied:
    name = (key or b"?").decode("utf-8", "replace")
    return Applied(ConfigRecord(ConfigKey(name), None), None, reason=reason)


class ConfigFollower:
    """A daemon thread applying ``memory.config`` to this process's settings holders.

    ``attach(obj, ...)`` gives each object the current settings at once and every later
    change (``obj.settings = new``); ``ready`` is set once the records the topic held when
    the follower first reached it are applied; ``applied``/``refused`` count records.
    """

    def __init__(self, bus: KafkaBus, base: Settings, *, poll_s: float = 0.2) -> None:
        self.bus = bus
        self.state = LiveState(base)
        self.poll_s = poll_s
        self.applied = 0
        self.refused = 0
        self.ready = threading.Event()
        self._holders: list[SettingsHolder] = []
        self._lock = threading.Lock()  # attach vs. a swap: never on a reader's path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="config-follower", daemon=True)

    @property
    def current(self) -> Settings:
        return self.state.current

    def attach(self, *holders: SettingsHolder) -> ConfigFollower:
        with self._lock:
            for h in holders:
                h.settings = self.state.current
                self._holders.append(h)
        return self

    def start(self) -> ConfigFollower:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        consumer = _consumer(self.bus)
        name = self.bus.topic(TOPIC_CONFIG)
        try:
            pending = self._assign(consumer, name)
            if pending is None:
                return
            while not self._stop.is_set():
                for msg in consumer.consume(num_messages=500, timeout=self.poll_s):
                    err = msg.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            log.warning("memory.config error", extra=log_fields(error=str(err)))
                        continue
                    self._apply(msg.key(), msg.value())
                    p = msg.partition()
                    offset = msg.offset()  # a consumed message has one (None: not consumed)
                    if p in pending and offset is not None and offset + 1 >= pending[p]:
                        del pending[p]
                if not pending and not self.ready.is_set():
                    self.ready.set()
        finally:
            consumer.close()

    def _assign(self, consumer: Consumer, name: str) -> dict[int, int] | None:
        """Wait for the topic (the node creates it in the background), then read it from
        the beginning; the partitions' ends as they are now, or None once stopped."""
        while not self._stop.is_set():
            try:
                parts = _partitions(consumer, name, 5.0)
                if parts is not None:
                    ends = _ends(consumer, name, parts, 5.0)
                    consumer.assign([TopicPartition(name, p, OFFSET_BEGINNING) for p in parts])
                    return ends
            except KafkaException as exc:  # broker not up yet: retried, as the node does
                log.warning("memory.config not reachable yet", extra=log_fields(error=str(exc)))
            self._stop.wait(1.0)
        return None

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        try:
            record = ConfigRecord.decode(key, value)
        except ConfigRefused as exc:
            self.refused += 1
            log.warning("memory.config record ignored", extra=log_fields(reason=str(exc)))
            return
        with self._lock:
            done = self.state.apply(record)
            if done.settings is None:
                self.refused += 1
                log.warning(
                    "memory.config record ignored",
                    extra=log_fields(
                        key=record.key.key, reason=done.reason, by=record.by, at=record.at
                    ),
                )
                return
            for h in self._holders:
                h.settings = done.settings
            held = self.state.live.get(record.key)
        self.applied += 1
        log.info(
            "live setting changed",
            extra=log_fields(
                key=record.key.key,
                value=None if held is None else held.value,  # None: back to the start value
                previous=done.previous,
                by=record.by,
                at=record.at,
            ),
        )


def follow_config(bus: KafkaBus, base: Settings, *holders: SettingsHolder) -> ConfigFollower:
    """Start a follower of ``memory.config`` that keeps ``holders``' settings live."""
    return ConfigFollower(bus, base).attach(*holders).start()
