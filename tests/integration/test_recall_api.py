"""POST /memory/v1/recall against the real stores: ranking, decay, lifecycle, errors."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from core.hashing import content_hash
from core.write_batch import WriteBatch
from memstream.schemas.enums import Level, MemType, Ownership, Status
from memstream.schemas.events import TOPIC_RECALL_HITS
from memstream.schemas.memory import MemoryRecord
from recall_api.breaker import BreakerState, CircuitBreaker
from recall_api.state import api_state

pytestmark = pytest.mark.integration
URL = "/memory/v1/recall"
NOW = datetime.now(UTC)


def record(user_id: int, content: str, **kw) -> MemoryRecord:
    level = kw.pop("level", Level.APP if kw.get("app_id") else Level.GLOBAL)
    at = kw.pop("at", NOW)
    base = dict(
        memory_id=f"m_{uuid.uuid4().hex[:24]}",
        user_id=user_id,
        content=content,
        content_hash=content_hash(content),
        level=level,
        ownership=Ownership.USER,
        mem_type=MemType.SEMANTIC,
        weight=0.8,
        weight_at=at,
        created_at=at,
        updated_at=at,
        valid_at=at,
    )
    return MemoryRecord(**{**base, **kw})


def seed(runtime, *records: MemoryRecord) -> list[MemoryRecord]:
    vectors = runtime.embedder.embed([r.content for r in records])
    runtime.memories.write(
        WriteBatch(
            memories=list(records), vectors={r.memory_id: vectors[i] for i, r in enumerate(records)}
        )
    )
    return list(records)


def recall(api, user_id: int, query: str, **body) -> dict:
    body.setdefault("timeout_ms", 5000)
    resp = api.post(URL, json={"user_id": user_id, "query": query, **body})
    return resp.json()


def ids(answer: dict) -> list[str]:
    return [m["memory_id"] for m in (answer.get("data") or {}).get("memories", [])]


def test_recall_ranks_the_relevant_memory_first_with_every_field(api, runtime, user_id):
    peanuts, _ = seed(
        runtime,
        record(
            user_id,
            "I am allergic to peanuts",
            source_msg_id="m-1",
            source_session_id="s-1",
            custom_tags={"topic": "health"},
        ),
        record(user_id, "My sister lives in Berlin"),
    )
    answer = recall(api, user_id, "what food allergies do I have?")
    assert answer["code"] == 0 and answer["trace_id"]
    assert answer["data"]["hit"] is True
    top = answer["data"]["memories"][0]
    assert top["memory_id"] == peanuts.memory_id
    assert top["content"] == "I am allergic to peanuts"
    assert top["source"] == {"session_id": "s-1", "msg_id": "m-1", "msg_ids": ["m-1"]}
    assert top["custom_tags"] == {"topic": "health"}
    assert {
        "ownership",
        "mem_type",
        "level",
        "app_id",
        "weight",
        "relevance",
        "score",
        "is_important",
        "created_at",
        "valid_at",
        "invalid_at",
    } <= top.keys()
    assert 0.3 <= top["relevance"] <= 1 and top["invalid_at"] is None
    # the order's score weighs relevance normalized over the kept memories (core.ranking):
    # the most relevant counts 1
    assert top["score"] == pytest.approx(0.7 * 1.0 + 0.3 * top["weight"], abs=1e-5)


def test_weight_is_decayed_at_request_time(api, runtime, user_id):
    old = seed(
        runtime, record(user_id, "I play the cello", weight=0.8, weight_at=NOW - timedelta(days=90))
    )[0]
    answer = recall(api, user_id, "cello", min_relevance=0)
    item = next(m for m in answer["data"]["memories"] if m["memory_id"] == old.memory_id)
    assert item["weight"] == pytest.approx(0.10, abs=0.005)


def test_chinese_query_finds_the_chinese_memory_through_the_lexical_channel(api, runtime, user_id):
    hotpot, work = seed(
        runtime, record(user_id, "我喜欢吃四川火锅"), record(user_id, "我在深圳工作")
    )
    answer = recall(api, user_id, "火锅")
    assert ids(answer)[0] == hotpot.memory_id
    assert work.memory_id not in ids(answer)


def test_switch_off_answers_40301_and_on_restores(api, runtime, user_id):
    mem, app_mem = seed(
        runtime,
        record(user_id, "I drive a blue Tesla"),
        record(user_id, "I like the Tesla app dark mode", app_id="cars"),
    )
    runtime.switches.set(user_id, None, False, tenant="default")
    off = recall(api, user_id, "Tesla", scope={"app_id": "cars"})
    assert off["code"] == 40301 and off["data"] == {"hit": False, "memories": []}
    runtime.switches.set(user_id, None, True, tenant="default")
    assert set(ids(recall(api, user_id, "Tesla", scope={"app_id": "cars"}))) == {
        mem.memory_id,
        app_mem.memory_id,
    }
    runtime.switches.set(
        user_id, "cars", False, tenant="default"
    )  # the app off: GLOBAL still recalled
    assert ids(recall(api, user_id, "Tesla", scope={"app_id": "cars"})) == [mem.memory_id]


def test_deleted_and_archived_memories(api, runtime, user_id):
    gone, kept, archived = seed(
        runtime,
        record(user_id, "I own a red bicycle"),
        record(user_id, "I own a green bicycle"),
        record(user_id, "I owned a yellow bicycle as a child"),
    )
    seed(
        runtime,
        dataclasses.replace(gone, status=Status.DELETED, deleted_at=NOW),
        # archived by decay, as the lifecycle writes it (its weight below the threshold):
        # an ARCHIVED memory still worth keeping is paged out (tests/integration/test_paging)
        dataclasses.replace(archived, status=Status.ARCHIVED, archived_at=NOW, weight=0.05),
    )
    assert ids(recall(api, user_id, "bicycle", min_relevance=0)) == [kept.memory_id]
    both = recall(api, user_id, "bicycle", min_relevance=0, include_archived=True)
    assert set(ids(both)) == {kept.memory_id, archived.memory_id}
    by_id = {m["memory_id"]: m for m in both["data"]["memories"]}
    assert by_id[archived.memory_id]["status"] == "ARCHIVED"


def test_superseded_memory_is_visible_only_as_of_its_validity(api, runtime, user_id):
    t0, t1 = NOW - timedelta(days=10), NOW - timedelta(days=5)
    old = record(user_id, "I live in Shenzhen", at=t0)
    new = record(user_id, "I live in Guangzhou", at=t1)
    seed(runtime, old, new)
    seed(
        runtime,
        dataclasses.replace(
            old, status=Status.SUPERSEDED, invalid_at=t1, superseded_by=new.memory_id
        ),
    )
    where = "where do I live?"
    assert ids(recall(api, user_id, where, min_relevance=0)) == [new.memory_id]
    then = recall(api, user_id, where, min_relevance=0, as_of=(t0 + timedelta(days=1)).isoformat())
    assert ids(then) == [old.memory_id]
    assert then["data"]["memories"][0]["invalid_at"] is not None
    now = recall(api, user_id, where, min_relevance=0, as_of=NOW.isoformat())
    assert ids(now) == [new.memory_id]


@pytest.mark.parametrize(
    "body",
    [
        {"top_k": 101},
        {"top_k": 0},
        {"query": "  "},
        {"min_relevance": 1.5},
        {"as_of": "2025-01-01T00:00:00"},
        {"scope": {"app_id": ""}},
        {"filter": {"mem_type": ["X"]}},
        {"scope": {"nope": 1}},
    ],
)
def test_bad_parameters_answer_40001(api, user_id, body):
    answer = api.post(URL, json={"user_id": user_id, "query": "q", **body}).json()
    assert answer["code"] == 40001, answer


def test_cross_app_is_not_open(api, user_id):
    answer = recall(api, user_id, "anything", scope={"cross_app": {"enabled": True}})
    assert answer["code"] == 40302 and answer["data"] == {"hit": False, "memories": []}


def test_recall_hit_event_is_published(api, runtime, stores, user_id):
    mem = seed(runtime, record(user_id, "My favourite colour is teal"))[0]
    assert ids(recall(api, user_id, "favourite colour")) == [mem.memory_id]
    topic = stores.kafka.topic(TOPIC_RECALL_HITS)
    consumer = Consumer({"bootstrap.servers": stores.kafka.bootstrap, "group.id": f"t{user_id}"})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(2)])
    found, deadline = None, time.monotonic() + 20
    while found is None and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error() and msg.key() == str(user_id).encode():
            found = json.loads(msg.value())
    consumer.close()
    assert found is not None and found["memory_ids"] == [mem.memory_id] and found["at"]


def test_a_recall_with_record_hit_false_publishes_no_hit(api, runtime, stores, user_id):
    cello, teal = seed(
        runtime, record(user_id, "I play the cello"), record(user_id, "My favourite colour is teal")
    )
    looked = recall(api, user_id, "which instrument do I play", top_k=1, record_hit=False)
    assert ids(looked) == [cello.memory_id]
    assert ids(recall(api, user_id, "favourite colour", top_k=1)) == [teal.memory_id]
    # one publishing thread, one partition per user: had the first recall published a hit,
    # it would come before the second one's
    topic = stores.kafka.topic(TOPIC_RECALL_HITS)
    consumer = Consumer({"bootstrap.servers": stores.kafka.bootstrap, "group.id": f"n{user_id}"})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(2)])
    first, deadline = None, time.monotonic() + 20
    while first is None and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error() and msg.key() == str(user_id).encode():
            first = json.loads(msg.value())
    consumer.close()
    assert first is not None and first["memory_ids"] == [teal.memory_id], first


def test_milvus_hanging_answers_50401_in_time_and_opens_the_breaker(
    api, runtime, user_id, monkeypatch
):
    mem = seed(runtime, record(user_id, "I collect vintage stamps"))[0]
    assert ids(recall(api, user_id, "stamps")) == [mem.memory_id]  # loads the hot cache
    recaller = api_state(api.app).recaller
    monkeypatch.setattr(recaller, "breaker", CircuitBreaker(failures=3, window_s=30, open_s=30))

    def hang(*args, **kwargs):
        time.sleep(1.5)
        raise RuntimeError("unreachable")

    monkeypatch.setattr(runtime.stores.milvus, "search", hang)
    for _ in range(3):
        started = time.monotonic()
        answer = recall(api, user_id, "stamps", include_archived=True, timeout_ms=300)
        assert answer["code"] == 50401 and answer["data"] == {"hit": False, "memories": []}
        assert time.monotonic() - started < 1.0
    assert recaller.breaker.state is BreakerState.OPEN
    started = time.monotonic()
    fast = recall(api, user_id, "stamps", include_archived=True, timeout_ms=300)
    assert fast["code"] == 50401 and "circuit open" in fast["msg"]
    assert time.monotonic() - started < 0.2
    # the hot path needs no store: the cached user is still served
    assert ids(recall(api, user_id, "stamps", timeout_ms=300)) == [mem.memory_id]


def test_cold_users_loading_do_not_hold_up_a_cached_users_recall(
    api, runtime, user_id, monkeypatch
):
    """Cold loads run on their own few threads (hot_cache_max_loads): ten cold users stuck
    loading leave the recall workers (8) free, so a cached user is answered meanwhile."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    seed(runtime, record(user_id, "I keep bees on the roof"))
    assert recall(api, user_id, "bees")["data"]["hit"] is True  # now cached
    assert runtime.cache.peek(user_id, tenant="default") is not None
    release, blocked = threading.Event(), []
    load = runtime.cache._load_many

    def stuck(keys):
        blocked.append(keys)
        release.wait(20)
        return load(keys)

    monkeypatch.setattr(runtime.cache, "_load_many", stuck)
    cold = [user_id + 1000 + i for i in range(10)]
    with ThreadPoolExecutor(10) as pool:
        waiting = [pool.submit(recall, api, u, "anything", timeout_ms=20_000) for u in cold]
        deadline = time.monotonic() + 10
        while not blocked and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            answer = recall(api, user_id, "bees", timeout_ms=3000)
            assert answer["code"] == 0 and answer["data"]["hit"] is True
            assert not release.is_set() and all(not w.done() for w in waiting)
        finally:
            release.set()
        assert [w.result()["code"] for w in waiting] == [0] * len(cold)


def test_a_cold_users_query_is_embedded_while_the_user_loads(api, runtime, user_id, monkeypatch):
    """A cold recall submits its query to the batcher before it waits for the load: the
    model call is made while the load is still held, and the answer is the hot one's."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    mem = seed(runtime, record(user_id, "My sister lives in Lisbon"))[0]
    runtime.cache.invalidate(user_id, tenant="default")
    batcher = api_state(api.app).recaller.batcher
    query = f"where does my sister live {uuid.uuid4().hex[:6]}"  # never cached
    release, seen = threading.Event(), []
    load = runtime.cache._load_many

    def held(keys):
        seen.append(batcher.embedded)
        release.wait(20)
        seen.append(batcher.embedded)
        return load(keys)

    monkeypatch.setattr(runtime.cache, "_load_many", held)
    before = batcher.embedded
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(recall, api, user_id, query, timeout_ms=20_000)
        deadline = time.monotonic() + 10
        while batcher.embedded == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert batcher.embedded == before + 1 and seen and not answer.done()
        release.set()
        assert ids(answer.result()) == [mem.memory_id]
    assert seen[-1] == before + 1  # embedded before the load returned


def test_a_cold_users_burst_shares_one_load_and_leaves_the_other_load_thread_free(
    api, runtime, user_id, monkeypatch
):
    """Three recalls of one cold user (a session) wait on one load; before, each took a
    load thread (hot_cache_max_loads = 2), so a second cold user queued behind them."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    a, b = user_id, user_id + 1
    seed(runtime, record(a, "I keep bees on the roof"), record(b, "I play the cello"))
    for u in (a, b):
        runtime.cache.invalidate(u, tenant="default")
    release, loading = threading.Event(), []
    load = runtime.cache._load_many

    def held(keys):
        loading.extend(k.user_id for k in keys)
        release.wait(20)
        return load(keys)

    monkeypatch.setattr(runtime.cache, "_load_many", held)
    with ThreadPoolExecutor(4) as pool:
        session = [pool.submit(recall, api, a, "bees", timeout_ms=20_000) for _ in range(3)]
        deadline = time.monotonic() + 10
        while not loading and time.monotonic() < deadline:
            time.sleep(0.01)
        other = pool.submit(recall, api, b, "cello", timeout_ms=20_000)
        while len(loading) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            assert sorted(loading) == [a, b]  # b's load runs while a's is held
        finally:
            release.set()
        assert [w.result()["data"]["hit"] for w in session] == [True] * 3
        assert other.result()["data"]["hit"] is True
    assert sorted(loading) == [a, b]  # one load each


def test_a_cold_recall_that_times_out_first_does_not_fail_the_others_waiting(
    api, runtime, user_id, monkeypatch
):
    import threading
    from concurrent.futures import ThreadPoolExecutor

    seed(runtime, record(user_id, "I keep bees on the roof"))
    runtime.cache.invalidate(user_id, tenant="default")
    release = threading.Event()
    load = runtime.cache._load_many
    monkeypatch.setattr(runtime.cache, "_load_many", lambda keys: (release.wait(20), load(keys))[1])
    with ThreadPoolExecutor(2) as pool:
        patient = pool.submit(recall, api, user_id, "bees", timeout_ms=20_000)
        time.sleep(0.2)
        hasty = recall(api, user_id, "bees", timeout_ms=300)
        assert hasty["code"] == 50401
        release.set()
        assert patient.result()["data"]["hit"] is True


def test_an_add_loads_an_uncached_user_in_the_background(api, runtime, user_id):
    """add (and session/close) prefetch the user: the recall that tends to follow is hot."""
    seed(runtime, record(user_id, "I keep bees on the roof"))
    runtime.cache.invalidate(user_id, tenant="default")
    recaller = api_state(api.app).recaller
    before = recaller.prefetched
    body = {"user_id": user_id, "messages": [{"role": "user", "content": "I also grow tomatoes"}]}
    assert api.post("/memory/v1/add", json=body).json()["code"] == 0
    assert recaller.prefetched == before + 1
    deadline = time.monotonic() + 10
    while runtime.cache.peek(user_id, tenant="default") is None and time.monotonic() < deadline:
        time.sleep(0.02)
    idx = runtime.cache.peek(user_id, tenant="default")
    assert idx is not None and [r.content for r in idx.records.values()] == [
        "I keep bees on the roof"
    ]
    assert api.post("/memory/v1/add", json=body).json()["code"] == 0  # cached: nothing to do
    assert recaller.prefetched == before + 1
