"""Content hashes and deterministic ids (docs/architecture.md#dedup-and-evolution).

Dedup compares the sha256 of *normalized* text so that "Likes  Tea" and "likes tea"
are the same fact. Ids are derived from the input that caused them (task, fact index,
operation) rather than drawn at random, so a replayed Kafka message or a retried task
produces the very same memory_id and change_id and every store upserts instead of
duplicating. The same inputs give the same ids in any process, on any machine.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from memstream.schemas.tenants import id_parts

ID_HEX_LEN = 24  # 96 bits: collision-free in practice for a per-deployment id space
_SEP = "\x1f"  # unit separator: cannot occur in ids, so ("a", "bc") != ("ab", "c")
_WS = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """NFKC, lowercase (casefold), trim, collapse every whitespace run to one space.

    NFKC folds full-width forms (common in CJK input: "ＡＢＣ　１２３") into their
    ASCII equivalents, so the same sentence typed on two keyboards hashes alike.
    """
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def content_hash(text: str) -> str:
    """sha256 hex of the normalized text: the per-user dedup key."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


def stable_id(prefix: str, *parts: object) -> str:
    """``prefix`` + the first 24 hex chars of sha256 over the parts (str()'d, separated).

    The prefix is part of the hash input too, so a memory id and a change id built
    from the same parts never coincide.
    """
    for part in parts:
        if _SEP in str(part):
            raise ValueError("id parts must not contain the unit separator \\x1f")
    raw = _SEP.join([prefix, *(str(p) for p in parts)])
    return prefix + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:ID_HEX_LEN]


def memory_id_for(task_id: str, fact_index: int, *, user_id: int, tenant: str) -> str:
    """The id of the ``fact_index``-th fact extracted by task ``task_id``: ``m_`` + 24 hex.

    ``user_id`` and the tenant are part of the key because platforms may produce to Kafka
    with task ids of their own choosing; two users' "task-1" must never share a memory id
    (nor user 42 of two tenants: memory ids are unique across tenants).
    """
    if fact_index < 0:
        raise ValueError("fact_index must be >= 0")
    return stable_id("m_", *id_parts(tenant, user_id, task_id, fact_index))


def change_id_for(memory_id: str, op_type: str, cause_id: str, seq: int = 0) -> str:
    """Id of one changelog row: ``c_`` + 24 hex.

    ``cause_id`` is what triggered the mutation (the task id of an add, the command id of
    a management write, the lifecycle pass id); ``seq`` tells apart several mutations of
    the same memory by the same cause (e.g. UPDATE then SUPERSEDE in one task).
    """
    return stable_id("c_", memory_id, str(op_type), cause_id, seq)


def task_id_for_source(topic: str, partition: int, offset: int) -> str:
    """A task id for an input that came without one: ``t_`` + 24 hex of its Kafka position.

    The position is stable across replays of the same record, which is all dedup needs.
    """
    return stable_id("t_", topic, partition, offset)
