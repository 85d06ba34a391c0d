"""Embedding shards: each worker of the cluster embeds the facts of its own users.

The embed step collects extracted batches into one model call (``op.collect``, keyed).
A keyed step runs each key on one worker, so one key for everything put every fact of a
cluster on one worker. Instead there is one shard key per worker of the whole cluster
(``workers`` = processes x workers per process), and a user's batches go to the shard
of the worker that owns their keyed writer: the hot index the embed step warms is the
one the writer then reads (per process, so it matters with several processes), and no
vector crosses to another worker between the two steps. With one worker there is one
shard, so batching is what it was: a batch spans all users.

Bytewax routes a key to worker ``siphash13(key) mod workers`` (Rust's ``DefaultHasher``
over the key's ``str`` hash, keys 0; ``route`` reproduces it). ``shard_keys`` picks for
each worker the first ``embed-N`` that routes to it, so shard ``i`` runs on worker ``i``.
``tests/unit/dataflows/test_embed_shards.py`` checks ``route`` against Bytewax itself;
were the hash to change, every shard would still be embedded, only not evenly spread.
"""

from __future__ import annotations

import threading
from functools import lru_cache

_M = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _M


def siphash13(data: bytes, k0: int = 0, k1: int = 0) -> int:
    """SipHash-1-3 of ``data`` (Rust's ``std`` hasher; ``DefaultHasher::new`` has keys 0)."""
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573

    def sip_round() -> None:
        nonlocal v0, v1, v2, v3
        v0 = (v0 + v1) & _M
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _M
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _M
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _M
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)

    n = len(data)
    end = n - n % 8
    for i in range(0, end, 8):
        m = int.from_bytes(data[i : i + 8], "little")
        v3 ^= m
        sip_round()
        v0 ^= m
    last = ((n & 0xFF) << 56) | int.from_bytes(data[end:], "little")
    v3 ^= last
    sip_round()
    v0 ^= last
    v2 ^= 0xFF
    for _ in range(3):
        sip_round()
    return v0 ^ v1 ^ v2 ^ v3


def route(key: str, workers: int) -> int:
    """The worker (0..workers-1) Bytewax runs state key ``key`` on (a ``str`` hashes its
    UTF-8 bytes and then the byte 0xFF)."""
    return siphash13(key.encode("utf-8") + b"\xff") % workers


@lru_cache(maxsize=64)
def shard_keys(workers: int) -> tuple[str, ...]:
    """One key per worker: ``shard_keys(w)[i]`` routes to worker ``i``."""
    if workers < 1:
        raise ValueError("workers: at least 1")
    found: dict[int, str] = {}
    n = 0
    while len(found) < workers:
        found.setdefault(route(f"embed-{n}", workers), f"embed-{n}")
        n += 1
    return tuple(found[i] for i in range(workers))


def embed_shard(user_key: str, workers: int) -> str:
    """The shard key of a user's batches: that of the worker owning ``user_key`` (the
    writer's state key) in a cluster of ``workers``."""
    return shard_keys(workers)[route(user_key, workers)]


def shard_worker(shard: str, workers: int) -> int:
    """The worker a shard key runs on: its own index for ``shard_keys``, and where a key
    restored from a snapshot of another worker count (or the single ``"all"`` of before)
    runs; its batches are flushed and embedded there as any other."""
    return route(shard, workers)


class WorkerCounts:
    """Facts embedded per worker index of this process's flow (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[int, int] = {}

    def add(self, worker: int, n: int) -> None:
        with self._lock:
            self._counts[worker] = self._counts.get(worker, 0) + n

    def snapshot(self) -> dict[int, int]:
        with self._lock:
            return dict(sorted(self._counts.items()))
