"""Topic configs that keep plaintext within the purge deadline
(docs/architecture.md#kafka-topics).

A platform may produce plaintext turns straight to ``memory.conversations``, and the DLQ
keeps rejected originals unchanged; neither can be crypto-shredded, so their lifetime
is what bounds them. A Kafka record lives until the segment holding it is deleted: the
segment rolls ``segment.ms`` after its first record, is deletable once its newest record
is ``retention.ms`` old, is found by the broker's check (``log.retention.check.interval.ms``,
5 min by default) and its file removed ``file.delete.delay.ms`` later. So

    segment.ms + retention.ms + check interval + file.delete.delay.ms ≤ deadline

where the deadline is ``conversations_retention_h`` (24 h by default). Both topics get
these configs when created and again at every start (an old deployment's 7-day
``segment.ms`` is corrected in place).

``memory.config`` is compacted instead: the last record of each setting is kept for
good, so a process starting later reads every live value (core.live_config).
"""

from __future__ import annotations

from memstream.schemas.events import TOPIC_CONFIG, TOPIC_CONVERSATIONS, TOPIC_DLQ

PLAINTEXT_TOPICS = (TOPIC_CONVERSATIONS, TOPIC_DLQ)
BROKER_CHECK_INTERVAL_MS = 5 * 60 * 1000  # Kafka's default log.retention.check.interval.ms
FILE_DELETE_DELAY_MS = 60 * 1000
MIN_MS = 60 * 1000


def plaintext_topic_config(deadline_ms: int) -> dict[str, str]:
    """retention.ms and segment.ms so that no record outlives ``deadline_ms``."""
    slack = BROKER_CHECK_INTERVAL_MS + FILE_DELETE_DELAY_MS
    segment = max(MIN_MS, min(3600 * 1000, (deadline_ms - slack) // 4))
    retention = max(MIN_MS, deadline_ms - slack - segment)
    return {
        "cleanup.policy": "delete",
        "retention.ms": str(retention),
        "segment.ms": str(segment),
        "file.delete.delay.ms": str(FILE_DELETE_DELAY_MS),
    }


def topic_config(base: str, deadline_ms: int) -> dict[str, str]:
    """The config a topic is created with (empty: the broker's defaults;
    docs/architecture.md#kafka-topics)."""
    if base == TOPIC_CONFIG:
        return {"cleanup.policy": "compact"}
    return plaintext_topic_config(deadline_ms) if base in PLAINTEXT_TOPICS else {}


def worst_case_lifetime_ms(config: dict[str, str]) -> int:
    return (
        int(config["segment.ms"])
        + int(config["retention.ms"])
        + BROKER_CHECK_INTERVAL_MS
        + int(config["file.delete.delay.ms"])
    )
