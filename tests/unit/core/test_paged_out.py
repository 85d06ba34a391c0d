"""Paged-out memories (docs/architecture.md#consolidation-and-paged-out-memories: evicted
for room, still found by default recall): the rule (``core.capacity.paged_out``), its
vectorized form over the hot index's columns (``UserIndex.paged_rows``), and moving rows
between a user's ACTIVE and paged indexes."""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta

import numpy as np
from test_user_index import DIM, NOW, TEXTS, rec

from core import record_codec
from core.capacity import paged_out
from core.scope import Branch, RecallPredicate
from core.settings import Settings
from core.user_index import UserIndex
from memstream.schemas.enums import Level, MemType, Ownership, Status

S = Settings()
US = timedelta(microseconds=1)


def _us(t) -> int:
    return (t - record_codec.EPOCH) // US


def test_the_rule_keeps_capacity_evictions_and_leaves_decayed_and_expired_out():
    evicted = rec(1, "x", status=Status.ARCHIVED, weight=0.6, weight_at=NOW)
    assert paged_out(evicted, NOW, S)
    assert paged_out(evicted, NOW + timedelta(days=30), S)  # 0.6 decays slowly
    # the lifecycle archives a decayed memory with its weight below the threshold
    decayed = dataclasses.replace(evicted, weight=S.archive_threshold * 0.9)
    assert not paged_out(decayed, NOW, S)
    # and an expired one past its expire_at, whatever its weight
    expired = dataclasses.replace(evicted, expire_at=NOW - timedelta(hours=1))
    assert not paged_out(expired, NOW, S)
    assert paged_out(dataclasses.replace(evicted, expire_at=NOW + timedelta(days=1)), NOW, S)
    # a paged-out memory that decays below the threshold leaves default recall
    assert not paged_out(evicted, NOW + timedelta(days=400), S)
    # only ARCHIVED ones: ACTIVE, DELETED and SUPERSEDED are not paged out
    for st in (Status.ACTIVE, Status.DELETED, Status.SUPERSEDED):
        assert not paged_out(dataclasses.replace(evicted, status=st), NOW, S)


def test_paged_rows_is_the_rule_row_by_row():
    rnd = random.Random(4)
    idx = UserIndex(7, DIM, tenant="t1")
    rng = np.random.default_rng(1)
    for i in range(300):
        persona = rnd.random() < 0.1
        idx.upsert(
            rec(
                i,
                TEXTS[i % len(TEXTS)],
                status=rnd.choice([Status.ARCHIVED, Status.ARCHIVED, Status.ACTIVE]),
                weight=rnd.uniform(0.0, 1.0),
                weight_at=NOW - timedelta(days=rnd.uniform(0, 200)),
                is_important=rnd.random() < 0.2,
                ownership=Ownership.AGENT if persona else Ownership.USER,
                custom_tags={"persona": True} if persona else {},
                expire_at=rnd.choice([None, None, NOW - timedelta(days=1), NOW + timedelta(1)]),
            ),
            rng.normal(size=DIM),
        )
    for now in (NOW, NOW + timedelta(days=60)):
        mask = idx.paged_rows(_us(now), S).tolist()
        want = [paged_out(r, now, S) for r in idx.records.values()]
        assert mask == want
        assert 30 < sum(want) < 270  # both kinds are there


def test_page_out_moves_the_row_and_page_in_brings_it_back():
    idx = UserIndex(7, DIM, capacity=2, tenant="t1")
    rng = np.random.default_rng(3)
    vecs = {}
    for i, t in enumerate(TEXTS):
        vecs[f"m_{i:04d}"] = v = rng.normal(size=DIM).astype(np.float32)
        idx.upsert(rec(i, t), v)
    before = idx.vector("m_0003")
    size = idx.nbytes
    old = idx.records["m_0003"]
    gone = dataclasses.replace(old, status=Status.ARCHIVED, weight=0.5, archived_at=NOW)
    assert idx.paged is None  # a user with nothing paged out holds no second index
    assert idx.page_out(gone)
    paged = idx.paged
    assert paged is not None
    assert "m_0003" not in idx and "m_0003" in paged and idx.holds("m_0003")
    assert len(idx) == len(TEXTS) - 1 and len(paged) == 1
    assert paged.records["m_0003"] == gone  # the new version, ARCHIVED
    assert np.array_equal(paged.vector("m_0003"), before)  # the same int8 row
    assert [m for m, _ in paged.lexical("allergic peanuts", 5)] == ["m_0003"]
    assert "m_0003" not in dict(idx.lexical("allergic peanuts", 5))
    assert idx.dense(vecs["m_0003"], 1)[0][0] != "m_0003"
    assert paged.dense(vecs["m_0003"], 1)[0][0] == "m_0003"
    assert idx.nbytes > size - 500  # counted with the rest (a row moved, nothing freed)
    assert not idx.page_out(gone)  # not held among the ACTIVE ones any more
    # back in: ACTIVE again, same row, searchable by both channels
    assert idx.page_in(old)
    assert "m_0003" in idx and "m_0003" not in paged and len(paged) == 0
    assert np.array_equal(idx.vector("m_0003"), before)
    assert idx.lexical("allergic peanuts", 1)[0][0] == "m_0003"
    # remove forgets a memory wherever it is held
    idx.page_out(gone)
    idx.remove("m_0003")
    assert not idx.holds("m_0003")


def test_allowed_on_paged_rows_is_the_predicate_record_by_record():
    """The paged index answers ``allowed`` as ``RecallPredicate.matches`` does, with the
    predicate recall searches it by (its statuses widened to ARCHIVED)."""
    rnd = random.Random(8)
    apps = [None, "a1", "a2"]
    idx = UserIndex(7, DIM, tenant="t1")
    rng = np.random.default_rng(5)
    for i in range(120):
        level = rnd.choice(list(Level))
        r = rec(
            i,
            TEXTS[i % len(TEXTS)],
            level=level,
            app_id=rnd.choice(apps),
            session_id=rnd.choice([None, "s1"]),
            ownership=rnd.choice(list(Ownership)),
            mem_type=rnd.choice(list(MemType)),
        )
        idx.upsert(r, rng.normal(size=DIM))
        if rnd.random() < 0.6:
            idx.page_out(dataclasses.replace(r, status=Status.ARCHIVED, archived_at=NOW))
    paged = idx.paged
    assert paged is not None and 40 < len(paged) < 100
    records = list(paged.records.values())
    for _ in range(200):
        branches = tuple(
            Branch(rnd.choice(list(Level)), rnd.choice([*apps, None]), rnd.choice([None, "s1"]))
            for _ in range(rnd.randint(1, 3))
        )
        pred = RecallPredicate(
            user_id=7,
            tenant_id="t1",
            branches=branches,
            statuses=frozenset({Status.ACTIVE, Status.ARCHIVED}),
            ownership=frozenset(rnd.sample(list(Ownership), rnd.randint(0, 2))),
        )
        mask, exact = paged.allowed(pred)
        assert exact
        assert mask.tolist() == [pred.matches(r) for r in records]
        # the plain default predicate (ACTIVE only) sees none of them
        plain = dataclasses.replace(pred, statuses=frozenset({Status.ACTIVE}))
        assert not paged.allowed(plain)[0].any()
