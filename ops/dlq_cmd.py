"""`memstream dlq list|replay`: look at ``memory.dlq`` and re-drive records after a fix.

Every record the flows refuse lands in ``memory.dlq`` unchanged, with headers saying why
(``error``) and where it came from (``source_topic``, ``source_partition``,
``source_offset``). ``list`` prints one JSON line per record — its headers, time and size,
never its value (it may hold a user's words). ``replay`` produces the chosen records
again, key and value unchanged, to the topic each came from, with a header
``replay_of: <dlq partition>:<offset>``. Both filter by ``--reason`` (a substring of
``error``), ``--since``/``--until`` (the DLQ record's time) and ``--topic``.

A re-driven record that fails again goes back to the DLQ once, carrying ``replay_of``;
``replay`` passes such records over unless ``--include-replayed`` asks for them, and
reads the DLQ only up to where it ended when the command started, so one run never
re-drives what it caused. See docs/operations.md#the-dead-letter-queue.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from confluent_kafka import Consumer, KafkaException, TopicPartition

from dataflows.ingest.items import REPLAY_HEADER
from memstream.schemas.events import (
    TOPIC_COMMANDS,
    TOPIC_CONFIG,
    TOPIC_CONVERSATIONS,
    TOPIC_DLQ,
    TOPIC_RECALL_HITS,
)
from sinks.errors import StoreError
from sinks.kafka import KafkaBus

REDRIVABLE = (TOPIC_CONVERSATIONS, TOPIC_COMMANDS, TOPIC_RECALL_HITS, TOPIC_CONFIG)


def _instant(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dlq", help="look at memory.dlq and re-drive records after a fix")
    dsub = p.add_subparsers(dest="dlq_command", required=True)
    for name, func, text in (
        ("list", run_list, "one JSON line per dead-lettered record (headers, never the value)"),
        ("replay", run_replay, "produce the chosen records again to the topic they came from"),
    ):
        c = dsub.add_parser(name, help=text)
        c.add_argument("--reason", default=None, help="only records whose error contains this")
        c.add_argument("--since", type=_instant, default=None, help="DLQ time from (ISO 8601)")
        c.add_argument("--until", type=_instant, default=None, help="DLQ time before (ISO 8601)")
        c.add_argument("--topic", default=None, help="only records from this source topic")
        c.add_argument("--limit", type=int, default=None, help="at most this many records")
        c.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for Kafka")
        if name == "replay":
            c.add_argument(
                "--include-replayed",
                action="store_true",
                help="also re-drive records that already failed again after a replay",
            )
            c.add_argument("--dry-run", action="store_true", help="say what would be re-driven")
        c.set_defaults(func=func)


@dataclass(frozen=True)
class DeadLetter:
    partition: int
    offset: int
    at: datetime
    key: bytes | None
    value: bytes | None
    headers: dict[str, str]

    @property
    def source_topic(self) -> str:
        return self.headers.get("source_topic", "")

    def describe(self) -> dict[str, object]:
        return {
            "dlq_partition": self.partition,
            "dlq_offset": self.offset,
            "at": self.at.isoformat(),
            "bytes": len(self.value or b""),
            **self.headers,
        }


def matches(d: DeadLetter, args: argparse.Namespace, base_topic: str | None = None) -> bool:
    """Whether ``d`` passes the filters; ``base_topic``: its source topic without the
    deployment's prefix (``--topic`` may name either)."""
    if args.reason is not None and args.reason not in d.headers.get("error", ""):
        return False
    if args.since is not None and d.at < args.since:
        return False
    if args.until is not None and d.at >= args.until:
        return False
    return args.topic is None or args.topic in (d.source_topic, base_topic)


def read_dlq(consumer: Consumer, topic: str, timeout: float) -> Iterator[DeadLetter]:
    """Every record of ``topic`` up to its end as it is now, in partition order."""
    meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    if meta is None or meta.error is not None:
        return
    ends: dict[int, int] = {}
    starts = []
    for p in sorted(meta.partitions):
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
        if high > low:
            ends[p] = high
            starts.append(TopicPartition(topic, p, low))
    consumer.assign(starts)
    while ends:
        msgs = consumer.consume(num_messages=500, timeout=timeout)
        if not msgs:
            raise KafkaException(f"no record arrived from {topic} in {timeout:.0f} s")
        for msg in msgs:
            if msg.error() is not None:
                continue
            p, o = msg.partition() or 0, msg.offset() or 0
            if p not in ends or o >= ends[p]:
                continue
            if o + 1 >= ends[p]:
                del ends[p]
            _, ms = msg.timestamp()
            yield DeadLetter(
                p,
                o,
                datetime.fromtimestamp(ms / 1000, UTC),
                _bytes(msg.key()),
                _bytes(msg.value()),
                _headers(msg.headers()),
            )


Header = str | bytes | None


def _headers(pairs: Sequence[tuple[str, Header]] | Mapping[str, Header] | None) -> dict[str, str]:
    """A record's headers as text (a consumer gives a list of (name, bytes) pairs)."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs or []
    return {str(k): _bytes(v).decode("utf-8", "replace") for k, v in items}


def _bytes(value: str | bytes | None) -> bytes:
    return value.encode() if isinstance(value, str) else (value or b"")


def _consumer(bus: KafkaBus) -> Consumer:
    return Consumer(
        bus.client_config(
            {
                "group.id": f"memstream-dlq-{uuid.uuid4().hex[:8]}",  # never committed
                "enable.auto.commit": False,
                "enable.partition.eof": False,
            }
        )
    )


def _bus() -> KafkaBus:
    from core.settings import get_settings

    return KafkaBus.from_settings(get_settings())


def run_list(args: argparse.Namespace) -> int:
    bus = _bus()
    consumer = _consumer(bus)
    shown = 0
    try:
        for d in read_dlq(consumer, bus.topic(TOPIC_DLQ), args.timeout):
            if matches(d, args, _base(bus, d.source_topic)):
                print(json.dumps(d.describe(), ensure_ascii=False))
                shown += 1
                if args.limit is not None and shown >= args.limit:
                    break
    except KafkaException as exc:
        print(f"memstream dlq: kafka at {bus.bootstrap}: {exc}", file=sys.stderr)
        return 1
    finally:
        consumer.close()
    return 0


def _base(bus: KafkaBus, topic: str) -> str | None:
    """The base name (``memory.conversations``) of a deployed topic name, if it is one."""
    return next((t for t in REDRIVABLE if bus.topic(t) == topic), None)


def run_replay(args: argparse.Namespace) -> int:
    bus = _bus()
    consumer = _consumer(bus)
    counts = {"redriven": 0, "skipped_replayed": 0, "skipped_topic": 0}
    try:
        if not args.dry_run:
            bus.setup()  # the producer (idempotent, acks=all)
        for d in read_dlq(consumer, bus.topic(TOPIC_DLQ), args.timeout):
            base = _base(bus, d.source_topic)
            if not matches(d, args, base):
                continue
            if base is None:
                counts["skipped_topic"] += 1
                continue
            if REPLAY_HEADER in d.headers and not args.include_replayed:
                counts["skipped_replayed"] += 1
                continue
            if not args.dry_run:
                bus.producer.produce(
                    d.source_topic,
                    key=d.key,
                    value=d.value,
                    headers=[(REPLAY_HEADER, f"{d.partition}:{d.offset}".encode())],
                )
                bus.producer.poll(0)
            counts["redriven"] += 1
            if args.limit is not None and counts["redriven"] >= args.limit:
                break
        if not args.dry_run and bus.flush(args.timeout):
            print("memstream dlq: some records were not acknowledged", file=sys.stderr)
            return 1
    except (KafkaException, StoreError) as exc:
        print(f"memstream dlq: kafka at {bus.bootstrap}: {exc}", file=sys.stderr)
        return 1
    finally:
        consumer.close()
        bus.close()
    verb = "would re-drive" if args.dry_run else "re-driven"
    print(json.dumps({"action": verb, **counts}))
    return 0
