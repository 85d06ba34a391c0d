"""Recall orchestration (docs/architecture.md#the-recall-path): switches → scope → embed →
search → rank.

Two paths, one predicate (``core.scope``), one ranking (``core.ranking``):

* **hot** (no ``include_archived``, no ``as_of``): the user's ACTIVE memories in memory
  (``sinks.hot_cache``) — exact cosine over the user's matrix plus the per-user BM25
  index, both filtered by ``predicate.matches`` — and, the same way, the user's paged-out
  ones (``UserIndex.paged``: evicted for room, ``core.capacity.paged_out`` at request
  time), which then rank with the rest and answer with status ARCHIVED; a user with none
  pays nothing for them. A recall never pages one back in (no write from this process):
  saying the fact again restores it (``dataflows.ingest.writer``). No store is touched once the user is
  loaded; the first touch loads it (through the breaker).
* **cold** (``include_archived`` or ``as_of``): Milvus filtered search with
  ``predicate.milvus_expr()`` for the dense channel; records and the lexical channel come
  from ``recall_api.cold_records`` (every non-deleted record of the user, filled once from
  ClickHouse), because Milvus holds no content — it is encrypted at rest in ClickHouse
  only. ClickHouse is never read per request. Each Milvus hit is re-checked with
  ``predicate.matches`` on its record, so the stores can never widen what a caller sees.
  A failed hot-cache load does not fall back to the cold path (it needs the same stores);
  it counts for the breaker and answers 50401.

Relevance in [0, 1] (``core.ranking.fuse`` by ``recall_fusion``, default hybrid
``d + l − d·l``): ``l`` = BM25 query coverage, ``d`` = the cosine calibrated for the
embedder (``core.calibration``; ``REFERENCE`` is embedded once here), times
``min(latin(query), latin(memory))`` for an English-only model (Chinese is ``[UNK]`` to
it). On the hot path a lexical-only candidate gets its cosine too (a dot product);
``dense`` / ``lexical`` fusion search one channel only (lexical: no query embedding). Then
``final = W·relevance + (1−W)·weight_now`` (weight decayed lazily at request time),
threshold ``min_relevance``, top_k.

Timeout: ``timeout_ms`` bounds the whole request, queueing included — the work runs on
a bounded pool under ``asyncio.wait_for`` and checks the deadline between stages; Milvus
gets the remaining time as its RPC timeout. Past it: 50401 with no memories, never a
partial list (a ranking over part of the candidates silently drops or reorders
memories). Store calls go through ``recall_api.breaker`` (5 failures in 10 s → 50401 at
once for 5 s). Switches are read through ``SwitchStore`` on every request (one Redis
HGETALL, ~0.1 ms), so a switch-off holds for the next recall in every process; the
master switch off answers 40301 with ``data = {hit: false, memories: []}``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import NamedTuple

import numpy as np

from core import metrics, record_codec, tracing
from core.calibration import REFERENCE, background, calibration_for, latin_share
from core.index_views import Fact, shared_decode
from core.ranking import Candidate, Ranked, overfetch_for, rank_with
from core.scope import RecallPredicate, ScopeError, ScopeRequest, resolve_scope
from core.settings import Settings
from core.user_index import UserIndex
from core.weights import weight_at_us
from memstream.schemas.enums import Status
from memstream.schemas.errors import ErrorCode
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.tenants import UserKey
from recall_api.batcher import QueryBatcher
from recall_api.breaker import CircuitBreaker, Deadline, RecallTimeout
from recall_api.channels import channels, top_of_both
from recall_api.cold_records import ColdRecords
from recall_api.errors import ApiError
from recall_api.hits import HitPublisher
from sinks.services import Services

log = logging.getLogger(__name__)
_US = timedelta(microseconds=1)

SWITCH_INTERVAL_S = 0.0005
GC_FULL_EVERY = 1000  # generation-1 collections between full ones (CPython's default: 10)
PREFETCH_QUEUE = 64  # users waiting for a background load (Recaller.prefetch), at most
EMPTY: dict[str, object] = {"hit": False, "memories": []}
# the candidates' ranking facts, their cosines and lexical scores, and how to get the
# records of the few that rank (the hot path decodes only those)
Records = Callable[[list[str]], dict[str, MemoryRecord]]
Gathered = tuple[dict[str, Fact], dict[str, float], dict[str, float], Records]
Hit = tuple[MemoryRecord, Ranked]  # the record and the numbers that placed it


@dataclass(slots=True)
class _Load:
    """One user's cold load in flight, shared by every recall of that user that arrives
    meanwhile (a session's next questions, a prefetch): one load-pool thread, not one
    each, so a cold user's burst cannot hold every load thread while other cold users
    queue behind it."""

    future: Future[UserIndex | None]  # None: a prefetch that failed (recall loads)
    waiters: int = 0
    keep: bool = False  # a prefetch: runs even if no recall waits for it


@dataclass(frozen=True, slots=True)
class RecallParams:
    scope: ScopeRequest
    query: str
    top_k: int
    min_relevance: float | None  # None = the setting (per app)
    timeout_ms: int


class _Search(NamedTuple):
    """One recall's search as ``_run`` resolved it, read by both ways of gathering
    candidates (``_hot``: the held index; ``_cold``: the stores, for archived or as-of
    recalls): the app's settings, the scope's predicate, the query vector (None:
    lexical only), how many to fetch and the deadline."""

    p: RecallParams
    s: Settings
    pred: RecallPredicate
    qvec: np.ndarray | None
    limit: int
    call: Deadline


class Recaller:
    def __init__(self, svc: Services, breaker: CircuitBreaker | None = None, workers: int = 8):
        self.svc = svc
        self.breaker = breaker or CircuitBreaker()
        self.breaker.export_state()  # memstream_recall_breaker_state reads this one
        self.batcher = QueryBatcher(svc.embedder, cache_size=svc.settings.embedding_cache_size)
        self.cold = ColdRecords(svc.memories, svc.settings.hot_cache_budget_mb * 1024 * 1024 // 4)
        svc.memories.subscribe(self.cold.apply)
        # keys of the users seen lately stay fresh off the request path: a cold user's
        # snapshot load needs no ClickHouse query for its data key (sinks.keyring)
        svc.memories.cipher.start_refresher()
        self.hits = HitPublisher(svc.stores.kafka)
        name = svc.embedder.name
        self.calibration = calibration_for(name, svc.settings.dense_calibration)
        self._reference = np.asarray(svc.embedder.embed(list(REFERENCE)), dtype=np.float32)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="recall")
        # Cold users load here, not on a recall worker: a burst of them queues on these
        # few threads while the workers keep answering the users already cached.
        self._loads = ThreadPoolExecutor(
            svc.settings.hot_cache_max_loads, thread_name_prefix="recall-load"
        )
        self._loads_lock = threading.RLock()  # in-flight loads; a cancel runs _landed under it
        self._prefetching: set[UserKey] = set()
        self._inflight: dict[UserKey, _Load] = {}  # under _loads_lock
        self.prefetched = 0  # background loads queued by prefetch
        # The event loop, the recall workers and the embedding thread hand the GIL to
        # each other on every request; with CPython's default 5 ms switch interval a
        # thread waits up to 5 ms for it. With 0.5 ms, p99 at 50 recalls/s of uncached
        # queries went from ~110-260 ms to ~50-65 ms on 2 busy cores, throughput
        # unchanged (process-wide; only ever lowered).
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
        # A full (generation 2) collection walks every tracked object: with ~600 users of
        # 200 memories in the hot cache that measured 340 ms with the GIL held, and with
        # the default thresholds (700, 10, 10) cold loads started one every ~20 s — a
        # stall that timed out every recall in flight. Collect the oldest generation
        # only after GC_FULL_EVERY young-generation passes instead of 10: cyclic garbage
        # is still collected, later (process-wide; only ever raised).
        young, middle, full = gc.get_threshold()
        gc.set_threshold(young, middle, max(full, GC_FULL_EVERY))

    async def recall(self, p: RecallParams) -> list[Hit]:
        """Ranked items, or ApiError 40001/40301/40302/50401. One trace per recall, its
        stages (load, embed, cache, search, rank) as child spans (``core.tracing``)."""
        with tracing.span("memstream.recall", user_id=p.scope.user_id, top_k=p.top_k) as sp:
            hits = await self._recall(p)
            if sp is not None:
                sp.set_attribute("hits", len(hits))
            return hits

    async def _recall(self, p: RecallParams) -> list[Hit]:
        call = Deadline(time.monotonic() + p.timeout_ms / 1000.0)
        loop = asyncio.get_running_loop()
        try:
            loaded, query = None, None
            if self._is_cold(p):
                # the query embeds while the user loads: a cold recall pays the longer
                # of the two, not their sum
                if self.svc.settings.for_app(p.scope.app_id).recall_fusion != "lexical":
                    query = self.batcher.submit(p.query)
                with tracing.span("recall.load"):  # a cold user's index, from the stores
                    loaded = await self._await_load(p, call)
            work = loop.run_in_executor(
                self._pool, tracing.carry(self._run), p, call, loaded, query
            )
            return await asyncio.wait_for(work, max(call.remaining(), 0.0))
        except TimeoutError:
            if call.abandon():
                self.breaker.failure()
            raise ApiError(
                ErrorCode.RECALL_TIMEOUT, f"recall did not finish within {p.timeout_ms} ms", EMPTY
            ) from None
        except RecallTimeout as exc:
            raise ApiError(ErrorCode.RECALL_TIMEOUT, str(exc), EMPTY) from None
        except ScopeError as exc:
            raise ApiError(ErrorCode(exc.code), str(exc), EMPTY) from None

    def dense_relevance(
        self, query: str, qvec: np.ndarray, cosines: Mapping[str, float], texts: Mapping[str, str]
    ) -> dict[str, float]:
        """Each cosine to ``qvec`` as recall's ranking reads it: calibrated against the
        query's background (``core.calibration``), ``texts`` the memories' words (their
        script). The key-value items' search ranks with it (docs/api.md#key-value-items)."""
        bg = background(self._reference @ qvec)
        q_latin = latin_share(query)
        return {
            mid: self.calibration.of_shares(cos, bg, latin_share(texts[mid]), q_latin)
            for mid, cos in cosines.items()
        }

    def prefetch(self, user_id: int, tenant: str) -> bool:
        """Load a user who is not cached, in the background (``add``, ``session/close``:
        a recall is likely to follow). On the cold-load threads, at most
        ``PREFETCH_QUEUE`` waiting, one per user, never raising: a prefetch that cannot
        run is only a later cold load. True when one was queued."""
        key = UserKey(tenant, user_id)
        if self.svc.cache.peek(user_id, tenant=tenant) is not None:
            return False
        with self._loads_lock:
            if key in self._inflight or len(self._prefetching) >= PREFETCH_QUEUE:
                return False
            self._prefetching.add(key)
            self.prefetched += 1
            load = self._inflight[key] = _Load(self._loads.submit(self._prefetch, key), keep=True)
            load.future.add_done_callback(partial(self._landed, key, load))
        return True

    async def _await_load(self, p: RecallParams, call: Deadline) -> UserIndex | None:
        """Join the user's load in flight, or start it; wait within the deadline. The
        last recall to give up on a load that has not started yet cancels it (as a
        timed-out executor call would), so a storm of timed-out cold users leaves no
        queue of loads nobody waits for."""
        key = UserKey(p.scope.tenant_id, p.scope.user_id)
        with self._loads_lock:
            load = self._inflight.get(key)
            if load is None:
                load = self._inflight[key] = _Load(self._loads.submit(self._load, p, call))
                load.future.add_done_callback(partial(self._landed, key, load))
            load.waiters += 1
        try:
            # shield: one waiter's timeout must not cancel the load the others wait for
            wait = asyncio.shield(asyncio.wrap_future(load.future))
            return await asyncio.wait_for(wait, max(call.remaining(), 0.0))
        finally:
            with self._loads_lock:  # (under the lock: nobody joins a cancelled load)
                load.waiters -= 1
                if load.waiters == 0 and not load.keep:
                    load.future.cancel()  # False (and nothing done) once it is running

    def _landed(self, key: UserKey, load: _Load, _: Future[UserIndex | None]) -> None:
        with self._loads_lock:
            if self._inflight.get(key) is load:
                del self._inflight[key]

    def _prefetch(self, key: UserKey) -> UserIndex | None:
        try:
            return self.svc.cache.get(key.user_id, tenant=key.tenant)
        except Exception as exc:  # a store outage: the recall will say so, not this
            log.info("prefetch of a user failed: %s", type(exc).__name__)
            return None
        finally:
            with self._loads_lock:
                self._prefetching.discard(key)

    def _is_cold(self, p: RecallParams) -> bool:
        """A hot-path recall whose user is not cached (peek: counts nothing)."""
        scope = p.scope
        if scope.include_archived or scope.as_of is not None:
            return False
        return self.svc.cache.peek(scope.user_id, tenant=scope.tenant_id) is None

    def _load(self, p: RecallParams, call: Deadline) -> UserIndex:
        call.check()
        user, tenant = p.scope.user_id, p.scope.tenant_id
        return self.breaker.call(call, partial(self.svc.cache.get, tenant=tenant), user)

    def _run(
        self,
        p: RecallParams,
        call: Deadline,
        loaded: UserIndex | None = None,
        query: Future[np.ndarray] | None = None,
    ) -> list[Hit]:
        call.check()
        scope = p.scope
        pred = resolve_scope(scope, self.svc.switches.get(scope.user_id, tenant=scope.tenant_id))
        if pred.is_empty:
            return []
        s = self.svc.settings.for_app(p.scope.app_id)
        qvec = None
        t0 = time.perf_counter()
        if s.recall_fusion != "lexical":
            try:
                with tracing.span("recall.embed"):
                    query = query or self.batcher.submit(p.query)
                    qvec = query.result(timeout=max(call.remaining(), 0.0))
            except TimeoutError:
                raise RecallTimeout("query embedding did not finish in time") from None
            call.check()
        t1 = time.perf_counter()
        search = _Search(p, s, pred, qvec, overfetch_for(p.top_k, s), call)
        if p.scope.include_archived or p.scope.as_of is not None:
            with tracing.span("recall.search", path="cold"):
                gathered = self._cold(search)
        else:
            with tracing.span("recall.cache", loaded=loaded is not None):
                loaded = self._index(p, call, loaded)
            with tracing.span("recall.search", path="hot"):
                gathered = self._hot(search, loaded)
        call.check()
        t2 = time.perf_counter()
        with tracing.span("recall.rank", candidates=len(gathered[0])):
            ranked = self._rank(p, s, qvec, *gathered)
        metrics.STAGE_EMBED.observe(t1 - t0)
        metrics.STAGE_SEARCH.observe(t2 - t1)
        metrics.STAGE_RANK.observe(time.perf_counter() - t2)
        return ranked

    def _index(self, p: RecallParams, call: Deadline, loaded: UserIndex | None) -> UserIndex:
        """The user's hot index: as loaded, cached, or loaded now."""
        user, tenant = p.scope.user_id, p.scope.tenant_id
        idx = loaded  # (an empty UserIndex is falsy: test for None)
        if idx is None:
            idx = self.svc.cache.lookup(user, tenant=tenant)
        if idx is None:
            idx = self.breaker.call(call, partial(self.svc.cache.get, tenant=tenant), user)
        return idx

    def _hot(self, search: _Search, loaded: UserIndex | None = None) -> Gathered:
        p, s, pred, qvec, limit, call = search
        idx = self._index(p, call, loaded)
        call.check()
        dense: dict[str, float] = {}
        lexical: dict[str, float] = {}
        facts: dict[str, Fact] = {}
        blobs: dict[str, bytes | None] = {}
        memo: dict[str, MemoryRecord] = {}  # records decode once, when first looked at
        with idx.lock:
            found = [(idx, *channels(idx, pred, p.query, qvec, limit, s, memo))]
            paged = idx.paged
            if paged is not None and len(paged):  # the paged-out ones, by the same predicate
                now_us = (datetime.now(UTC) - record_codec.EPOCH) // _US
                wide = dataclasses.replace(pred, statuses=pred.statuses | {Status.ARCHIVED})
                rows = paged.paged_rows(now_us, s)
                found.append((paged, *channels(paged, wide, p.query, qvec, limit, s, memo, rows)))
                found = top_of_both(found, limit)
            for held, d, lx in found:
                if qvec is not None and s.recall_fusion == "hybrid":
                    d.update(held.cosine(qvec, [m for m in lx if m not in d]))
                got = held.facts(d.keys() | lx.keys())
                dense.update(d)
                lexical.update(lx)
                facts.update(got)
                blobs.update({mid: held.blob(mid) for mid in got})  # decoded after the lock

        def records(ids: list[str]) -> dict[str, MemoryRecord]:
            return {m: memo.get(m) or shared_decode(blobs[m]) for m in ids}

        return facts, dense, lexical, records

    def _cold(self, search: _Search) -> Gathered:
        p, s, pred, qvec, limit, call = search
        user, tenant = p.scope.user_id, p.scope.tenant_id
        entry = self.cold.peek(user, tenant=tenant)
        if entry is None:
            entry = self.breaker.call(call, partial(self.cold.get, tenant=tenant), user)
        call.check()
        found = None
        if qvec is not None:
            found = self.breaker.call(
                call,
                self.svc.stores.milvus.search,
                [qvec.tolist()],
                pred.milvus_expr(
                    lambda text: self.svc.memories.cipher.blind_all(user, text, tenant)
                ),
                limit,
                ["memory_id"],
                max(call.remaining(), 0.001),
            )
        hits = found[0] if found else []
        with entry.lock:
            dense: dict[str, float] = {}
            for h in hits:
                mid = h.get("memory_id") or h.get("id")
                if not isinstance(mid, str):  # no id: no record of ours either
                    continue
                rec = entry.records.get(mid)
                if rec is not None and pred.matches(rec):
                    dense[mid] = float(h["distance"])
            lexical: dict[str, float] = {}
            scored = entry.lexical.normalized(p.query) if s.recall_fusion != "dense" else {}
            for mid, score in sorted(scored.items(), key=lambda kv: -kv[1]):
                if len(lexical) == limit:
                    break
                if pred.matches(entry.records[mid]):
                    lexical[mid] = score
            records = {mid: entry.records[mid] for mid in dense.keys() | lexical.keys()}
        facts = {mid: Fact.of(rec) for mid, rec in records.items()}
        return facts, dense, lexical, lambda ids: {m: records[m] for m in ids}

    def _rank(
        self,
        p: RecallParams,
        s: Settings,
        qvec: np.ndarray | None,
        facts: dict[str, Fact],
        dense: dict[str, float],
        lexical: dict[str, float],
        records: Records,
    ) -> list[Hit]:
        now_us = (datetime.now(UTC) - record_codec.EPOCH) // _US
        bg = background(self._reference @ qvec) if qvec is not None else None
        q_latin = latin_share(p.query)
        cands = []
        for mid, f in facts.items():
            cos = dense.get(mid)
            rel = None
            if cos is not None and bg is not None:
                rel = self.calibration.of_shares(cos, bg, f.latin, q_latin)
            w = weight_at_us(
                f.weight, f.weight_at_us, now_us, s, is_important=f.is_important, persona=f.persona
            )
            cands.append(Candidate(mid, w, rel, lexical.get(mid)))
        extra = {} if p.min_relevance is None else {"min_relevance": p.min_relevance}
        ranked = rank_with(cands, p.top_k, s, **extra)
        got = records([r.memory_id for r in ranked])
        return [(got[r.memory_id], r) for r in ranked]
