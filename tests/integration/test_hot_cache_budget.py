"""The hot cache under random budgets and access orders, on the real stores: it never
holds more than its budget, and a user evicted and loaded again (from the stores or the
Redis snapshot) ranks exactly as the same user held hot."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.write_batch import WriteBatch
from memstream.schemas.enums import Status
from memstream.schemas.tenants import DEFAULT_TENANT
from sinks.hot_cache import HotCache
from tests.helpers.lifecycle import record, seed

pytestmark = pytest.mark.integration

WORDS = ["peanuts", "Lisbon", "coffee", "bees", "深圳", "打车", "音乐", "squash", "Kerala", "mug"]
QUERIES = ["what can't I eat?", "where does my sister live", "叫辆出租车", "my hobbies"]


@pytest.fixture(scope="module")
def population(runtime):
    """Eight users of 1-40 memories each, and each one's answers while held hot."""
    rng = random.Random(11)
    base = rng.getrandbits(40) << 20
    users = {}
    for n, u in enumerate(range(base, base + 8)):
        texts = [
            f"{rng.choice(WORDS)} {rng.choice(WORDS)} note {i} of user {n}"
            for i in range(rng.randint(1, 40))
        ]
        seed(runtime, *(record(u, t) for t in texts))
        users[u] = len(texts)
    qvecs = runtime.embedder.embed_queries(QUERIES)
    hot = HotCache(runtime.memories, runtime.settings.embedding_dim, 1 << 30)
    answers = {u: _answers(hot, u, qvecs) for u in users}
    return users, qvecs, answers


def _answers(cache: HotCache, user_id: int, qvecs) -> list:
    """Per query, the dense and the lexical top 10 (memory_id, score)."""
    idx = cache.get(user_id, tenant=DEFAULT_TENANT)
    with idx.lock:
        return [(idx.dense(v, 10), idx.lexical(q, 10)) for q, v in zip(QUERIES, qvecs, strict=True)]


def assert_same(got: list, want: list) -> None:
    """The same ids in the same order, the same scores up to 1e-5 (BLAS may sum in
    another order when a matrix lies at another alignment)."""
    for got_pair, want_pair in zip(got, want, strict=True):
        for g, w in zip(got_pair, want_pair, strict=True):
            assert [m for m, _ in g] == [m for m, _ in w]
            assert [x for _, x in g] == pytest.approx([x for _, x in w], abs=1e-5)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    budget_kb=st.integers(min_value=1, max_value=400),
    order=st.lists(st.integers(min_value=0, max_value=7), min_size=1, max_size=25),
    snapshots=st.booleans(),
)
def test_never_over_budget_and_a_reloaded_user_ranks_as_a_hot_one(
    runtime, population, budget_kb, order, snapshots
):
    users, qvecs, answers = population
    ids = sorted(users)
    cache = HotCache(
        runtime.memories,
        runtime.settings.embedding_dim,
        budget_kb * 1024,
        snapshots=runtime.cache.snapshots if snapshots else None,
    )
    loads, evictions = _counted()
    for i in order:
        u = ids[i]
        assert_same(_answers(cache, u, qvecs), answers[u])
        assert cache.nbytes == _held(cache) <= cache.budget
    # /metrics: every user this cache loaded is held or was evicted by the budget
    loads_now, evictions_now = _counted()
    loaded, evicted = loads_now - loads, evictions_now - evictions
    assert loaded == evicted + len(cache) and loaded >= len(set(order))


def test_writes_to_a_held_user_count_against_the_budget(runtime, population):
    """The budget's running total follows writes that grow or shrink a held user in
    place, and a write that takes the cache over its budget evicts the least recent."""
    users, _, _ = population
    a, b = sorted(users)[:2]
    cache = HotCache(runtime.memories, runtime.settings.embedding_dim, 1 << 30)
    cache.get(a, tenant=DEFAULT_TENANT)
    cache.get(b, tenant=DEFAULT_TENANT)
    before = cache.nbytes
    assert before == _held(cache)
    cache.budget = before  # full: any growth must evict
    added = [record(b, f"squash and coffee, later note {i}") for i in range(30)]
    vectors = runtime.embedder.embed([r.content for r in added])
    cache.apply(
        WriteBatch(
            memories=added, vectors=dict(zip([r.memory_id for r in added], vectors, strict=True))
        )
    )
    assert cache.peek(a, tenant=DEFAULT_TENANT) is None  # the least recent one went
    grown = cache.peek(b, tenant=DEFAULT_TENANT)
    assert grown is not None and len(grown) == users[b] + 30
    assert cache.nbytes == _held(cache) == grown.nbytes <= cache.budget
    deleted = [dataclasses.replace(r, status=Status.DELETED) for r in added]
    cache.apply(WriteBatch(memories=deleted))
    assert len(grown) == users[b]
    assert cache.nbytes == _held(cache) == grown.nbytes


def _held(cache: HotCache) -> int:
    """What the held users measure now (the cache keeps a running total)."""
    return sum(idx.nbytes for idx in cache._users.values())


def _counted() -> tuple[float, float]:
    """memstream_hot_cache_loads_total (both sources) and _evictions_total, now."""
    from prometheus_client import REGISTRY

    get = REGISTRY.get_sample_value
    loads = sum(
        get("memstream_hot_cache_loads_total", {"source": s}) or 0 for s in ("snapshot", "stores")
    )
    return loads, get("memstream_hot_cache_evictions_total") or 0.0
