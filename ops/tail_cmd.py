"""`memstream tail`: follow ``memory.changes``, one JSON line per applied change.

Reads every partition with no consumer group (nothing committed, nothing to clean up),
from the end (``--from-beginning``: from the oldest kept event), and prints each event
as compact JSON on stdout, flushed at once, so ``memstream tail --user 42 | jq`` shows a
user's changes as they happen. ``--user`` and ``--tenant`` keep only that user's or
tenant's events (an event written before tenants is tenant ``default``'s). A value that
is not a change event is reported on stderr, never dropped silently. Ctrl-C ends it
with exit 0; a broker that cannot be reached exits 1, a bad argument 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from memstream.schemas.events import TOPIC_CHANGES
from memstream.schemas.json_types import JsonObject
from memstream.schemas.tenants import DEFAULT_TENANT, check_tenant


def _user_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a user id (an integer)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a user id (>= 0)")
    return value


def _tenant(text: str) -> str:
    try:
        return check_tenant(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tail", help="follow memory.changes: one JSON line per change")
    p.add_argument("--user", type=_user_id, default=None, help="only this user id's changes")
    p.add_argument("--tenant", type=_tenant, default=None, help="only this tenant's changes")
    p.add_argument(
        "--from-beginning", action="store_true", help="start at the oldest kept change, not now"
    )
    p.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for the broker at start"
    )
    p.set_defaults(func=run)


def keep(event: JsonObject, user: int | None, tenant: str | None) -> bool:
    """Whether a change event passes ``--user`` / ``--tenant`` (None: any)."""
    if user is not None and event.get("user_id") != user:
        return False
    return tenant is None or event.get("tenant_id", DEFAULT_TENANT) == tenant


def run(args: argparse.Namespace) -> int:
    from core.settings import get_settings
    from sinks.kafka import KafkaBus

    bus = KafkaBus.from_settings(get_settings())
    topic = bus.topic(TOPIC_CHANGES)
    consumer = Consumer(
        bus.client_config(
            {
                "group.id": f"memstream-tail-{uuid.uuid4().hex[:8]}",  # never committed
                "enable.auto.commit": False,
                "socket.timeout.ms": 5000,
            }
        )
    )
    try:
        try:
            parts = _partitions(consumer, topic, args.timeout)
        except KafkaException as exc:
            print(f"memstream tail: kafka at {bus.bootstrap}: {exc}", file=sys.stderr)
            return 1
        if not parts:
            print(f"memstream tail: topic {topic} not found at {bus.bootstrap}", file=sys.stderr)
            return 1
        try:
            # the end offsets as they are now: every change after the line below is shown
            starts = [_start(consumer, topic, p, args) for p in parts]
        except KafkaException as exc:
            print(f"memstream tail: kafka at {bus.bootstrap}: {exc}", file=sys.stderr)
            return 1
        consumer.assign(starts)
        print(f"following {topic} ({len(parts)} partitions); Ctrl-C to stop", file=sys.stderr)
        sys.stderr.flush()
        _follow(consumer, args.user, args.tenant)
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:  # `| head`: the reader has had enough
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no flush error at exit
        return 0
    finally:
        consumer.close()
    return 0


def _start(
    consumer: Consumer, topic: str, partition: int, args: argparse.Namespace
) -> TopicPartition:
    if args.from_beginning:
        return TopicPartition(topic, partition, OFFSET_BEGINNING)
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=args.timeout)
    return TopicPartition(topic, partition, high)


def _partitions(consumer: Consumer, topic: str, timeout: float) -> list[int]:
    meta = consumer.list_topics(topic, timeout=timeout)
    found = meta.topics.get(topic)
    if found is None or found.error is not None:
        return []
    return sorted(found.partitions)


def _follow(consumer: Consumer, user: int | None, tenant: str | None) -> None:
    out = sys.stdout
    while True:
        for msg in consumer.consume(num_messages=500, timeout=0.5):
            err = msg.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    print(f"memstream tail: {err}", file=sys.stderr)
                continue
            try:
                event = json.loads(msg.value() or b"")
                if not isinstance(event, dict):
                    raise ValueError("not an object")
            except ValueError:
                print(
                    f"memstream tail: partition {msg.partition()} offset {msg.offset()}: "
                    "not a change event (not a JSON object)",
                    file=sys.stderr,
                )
                continue
            if keep(event, user, tenant):
                out.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
                out.flush()
