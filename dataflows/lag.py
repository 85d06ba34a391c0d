"""Kafka consumer lag of the flows, per topic-partition, computed when /metrics is read.

Bytewax keeps its read positions in its recovery snapshots and commits no offsets to
Kafka, so no consumer group knows how far behind a flow is. The flow's source does:
each partition it reads (``dataflows.sources``) reports here the next offset it will
read, once per non-empty batch (an int store, nothing more on the hot path). A scrape
asks the broker for the partitions' high watermarks (one ``list_offsets`` call per
cluster, the low watermarks too for a partition that has read nothing yet) and exports
``high watermark - next offset``. A partition whose flow stopped keeps its last
position, so the lag of a stopped flow keeps growing until it runs again. A broker that
does not answer within ``TIMEOUT_S`` leaves its partitions out of that scrape.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

NAME = "memstream_kafka_consumer_lag"
HELP = "messages in a topic-partition the flow has not read yet (high watermark - next offset)"
TIMEOUT_S = 2.0
_CLIENT = ("security.", "sasl.", "ssl.")  # of a source's config, what an admin client needs


@dataclass
class Position:
    """Where one flow reads one partition; ``next`` is written by the source only."""

    flow: str
    topic: str
    partition: int
    config: tuple[tuple[str, str], ...]  # the source's client config (bootstrap, security)
    next: int  # the next offset to read, or OFFSET_BEGINNING / OFFSET_END before any read


class ConsumerLag(Collector):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._positions: dict[tuple[str, str, int], Position] = {}
        self._admins: dict[tuple[tuple[str, str], ...], AdminClient] = {}

    def track(
        self, flow: str, config: dict[str, str], topic: str, partition: int, next_offset: int
    ) -> Position:
        """The position a (re)built source partition updates; replaces an older one."""
        client = {
            k: v for k, v in config.items() if k == "bootstrap.servers" or k.startswith(_CLIENT)
        }
        pos = Position(flow, topic, partition, tuple(sorted(client.items())), next_offset)
        with self._lock:
            self._positions[(flow, topic, partition)] = pos
        return pos

    def forget(self, flow: str) -> None:
        with self._lock:
            for key in [k for k in self._positions if k[0] == flow]:
                del self._positions[key]

    def describe(self) -> list[GaugeMetricFamily]:
        return [GaugeMetricFamily(NAME, HELP, labels=["flow", "topic", "partition"])]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(NAME, HELP, labels=["flow", "topic", "partition"])
        with self._lock:
            positions = list(self._positions.values())
        by_cluster: dict[tuple[tuple[str, str], ...], list[Position]] = {}
        for p in positions:
            by_cluster.setdefault(p.config, []).append(p)
        for config, group in by_cluster.items():
            for p, lag in self._lags(config, group):
                family.add_metric([p.flow, p.topic, str(p.partition)], lag)
        yield family

    def _lags(
        self, config: tuple[tuple[str, str], ...], group: list[Position]
    ) -> list[tuple[Position, int]]:
        admin = self._admin(config)
        parts = {(p.topic, p.partition) for p in group}
        high = _offsets(admin, parts, OffsetSpec.latest())
        unread = {(p.topic, p.partition) for p in group if p.next == OFFSET_BEGINNING}
        low = _offsets(admin, unread, OffsetSpec.earliest()) if unread else {}
        out = []
        for p in group:
            nxt: int | None
            end = high.get((p.topic, p.partition))
            if end is None:
                continue
            if p.next == OFFSET_END:
                nxt = end
            elif p.next == OFFSET_BEGINNING:
                nxt = low.get((p.topic, p.partition))
                if nxt is None:
                    continue
            else:
                nxt = p.next
            out.append((p, max(end - nxt, 0)))
        return out

    def _admin(self, config: tuple[tuple[str, str], ...]) -> AdminClient:
        with self._lock:
            admin = self._admins.get(config)
            if admin is None:
                admin = self._admins[config] = AdminClient(
                    {
                        **dict(config),
                        "socket.timeout.ms": str(int(TIMEOUT_S * 1000)),
                        # librdkafka's reconnect lines go to logging, not stderr (the stubs
                        # type config values as str/int/float: a logger object is allowed too)
                        "logger": log,  # type: ignore[dict-item]
                    }
                )
            return admin


def _offsets(
    admin: AdminClient, parts: set[tuple[str, int]], spec: OffsetSpec
) -> dict[tuple[str, int], int]:
    """The offsets ``spec`` names, for the partitions the broker answered in time."""
    out: dict[tuple[str, int], int] = {}
    if not parts:
        return out
    try:
        futures = admin.list_offsets(
            {TopicPartition(t, p): spec for t, p in parts}, request_timeout=TIMEOUT_S
        )
    except Exception as exc:  # a broker that cannot be asked: no lag this scrape
        log.info("consumer lag: list_offsets failed: %s", type(exc).__name__)
        return out
    for tp, fut in futures.items():
        try:
            out[(tp.topic, tp.partition)] = fut.result(timeout=TIMEOUT_S + 1).offset
        except Exception as exc:
            log.info("consumer lag: no offset for a partition: %s", type(exc).__name__)
    return out


LAG = ConsumerLag()
REGISTRY.register(LAG)
