"""No invisible window while a lifecycle pass archives (issue 42, part 4): a memory that
moves from ACTIVE to ARCHIVED (decay, expiry) is found at every moment by default recall
or by ``include_archived`` — recalled in a loop, both views, while a pass at +91 days runs
through the keyed writer (real Kafka), and right after it."""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta

import pytest

from dataflows.lifecycle.scan import run_pass
from dataflows.lifecycle.submit import KafkaVia
from tests.helpers.lifecycle import T0, record, seed

pytestmark = pytest.mark.integration

TOPICS = ["seashells", "typewriter", "ferry", "bonsai", "cello", "kombucha", "parrot",
          "canoe", "lighthouse", "narwhal", "chanterelles", "metronome"]  # fmt: skip
USERS = 20
WATCHERS = 4  # threads recalling meanwhile, each over a quarter of the users


def _found(api, user_id: int, **extra) -> dict[str, str]:
    body = {"user_id": user_id, "query": "I once cared about", "top_k": 100,
            "min_relevance": 0, **extra}  # fmt: skip
    resp = api.post("/memory/v1/recall", json=body).json()
    assert resp["code"] == 0, resp
    return {m["memory_id"]: m["status"] for m in resp["data"]["memories"]}


def _seed_user(runtime, user_id: int) -> list[str]:
    """Memories a pass at T0 + 91 days archives: most for decay, a few for expiry."""
    recs = [
        record(
            user_id,
            f"I once cared about {topic} number {i}",
            # every third one expires at day 30 (its weight still high): EXPIRED
            **({"expire_at": T0 + timedelta(days=30), "weight": 0.95} if i % 3 == 0 else {}),
        )
        for i, topic in enumerate(TOPICS)
    ]
    return [r.memory_id for r in seed(runtime, *recs)]


def test_an_archived_memory_is_always_found_by_one_view_during_a_pass(api, runtime, ingest):
    users = {random.getrandbits(40): [] for _ in range(USERS)}
    for user_id in users:
        users[user_id] = _seed_user(runtime, user_id)
        # a running service: both views of every user are loaded before the pass
        assert set(_found(api, user_id)) == set(users[user_id])
        assert set(_found(api, user_id, include_archived=True)) == set(users[user_id])

    summary: dict = {}
    via = KafkaVia(runtime.stores, 60)

    def paced(commands):  # one user per chunk, a pause after each: a pass of a few seconds
        answers = via(commands)
        time.sleep(0.15)
        return answers

    def one_pass() -> None:
        summary.update(
            run_pass(runtime, T0 + timedelta(days=91), paced, users=list(users), chunk=1)
        )

    missing: list[tuple[int, str]] = []
    rounds: list[int] = []
    passing = threading.Thread(target=one_pass)

    def watch(part: dict[int, list[str]]) -> None:
        n = 0
        while passing.is_alive() or n < 2:  # and two rounds after it, at least
            n += 1
            for user_id, ids in part.items():
                # default first, then include_archived: a memory ACTIVE at the first call
                # is found there; one archived before it must be found by the second
                seen = set(_found(api, user_id)) | set(_found(api, user_id, include_archived=True))
                missing.extend((user_id, m) for m in ids if m not in seen)
        rounds.append(n)

    passing.start()
    items = list(users.items())
    watchers = [threading.Thread(target=watch, args=(dict(items[i::WATCHERS]),))
                for i in range(WATCHERS)]  # fmt: skip
    for w in watchers:
        w.start()
    for w in [passing, *watchers]:
        w.join()
    assert summary["failed_commands"] == 0, summary
    assert summary["archived"] + summary["expired"] == USERS * len(TOPICS), summary
    assert not missing, f"{len(missing)} misses over {rounds} rounds: {missing[:10]}"
    for user_id, ids in users.items():  # and after it: archived, out of default recall
        assert not set(_found(api, user_id)) & set(ids)
        assert _found(api, user_id, include_archived=True) == dict.fromkeys(ids, "ARCHIVED")
