"""Every Prometheus metric family memstream defines, in one place (README "Metrics").

They live in prometheus-client's default registry, so one ``GET /metrics`` of the
embedded node shows the API, the hot cache, both dataflows and the models together; a
dataflow run alone serves the same registry on ``--metrics-port``. Definitions only, no
I/O: the modules that do the work import the children they count and ``inc`` them.
Children whose label values are known up front are bound here once, so a hot path pays
a counter increment and no label lookup. The Kafka consumer lag is computed at scrape
time by ``dataflows.lag`` (a collector), not counted.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Gauge, Histogram

_FAST = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
_SLOW = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_FRESH = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800)
_SIZES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)

# --- HTTP (recall_api.app, recall_api.health) -----------------------------------
HTTP_REQUESTS = Counter("memstream_http_requests_total", "HTTP requests", ["route", "code"])
HTTP_LATENCY = Histogram(
    "memstream_http_request_seconds",
    "HTTP request latency, by route template and status code",
    ["route", "code"],
    buckets=_FAST,
)
DEPENDENCY_UP = Gauge(
    "memstream_dependency_up", "1 when the dependency answered /readyz", ["dependency"]
)

# --- recall (recall_api.recall, recall_api.batcher) ------------------------------
RECALL_STAGE = Histogram(
    "memstream_recall_stage_seconds",
    "time in one stage of a recall: embed (the query), search (dense + lexical), rank (fuse)",
    ["stage"],
    buckets=_FAST,
)
STAGE_EMBED = RECALL_STAGE.labels("embed")
STAGE_SEARCH = RECALL_STAGE.labels("search")
STAGE_RANK = RECALL_STAGE.labels("rank")
QUERY_CACHE = Counter(
    "memstream_query_embedding_cache_total",
    "query embeddings asked of the recall tier's LRU, by result (hit ratio: hit / all)",
    ["result"],
)
QUERY_CACHE_HIT = QUERY_CACHE.labels("hit")
QUERY_CACHE_MISS = QUERY_CACHE.labels("miss")
BREAKER_STATE = Gauge(
    "memstream_recall_breaker_state",
    "the recall path's store circuit breaker: 0 closed, 1 half-open, 2 open",
)
BREAKER_CODES = {"closed": 0, "half_open": 1, "open": 2}

# --- hot cache (sinks.hot_cache) --------------------------------------------------
HOT_LOOKUPS = Counter(
    "memstream_hot_cache_lookups_total", "users asked of the hot cache, by result", ["result"]
)
HOT_HIT = HOT_LOOKUPS.labels("hit")
HOT_MISS = HOT_LOOKUPS.labels("miss")
HOT_LOADS = Counter(
    "memstream_hot_cache_loads_total",
    "users loaded into the hot cache, by source (snapshot: Redis; stores: ClickHouse + Milvus)",
    ["source"],
)
HOT_LOAD_SNAPSHOT = HOT_LOADS.labels("snapshot")
HOT_LOAD_STORES = HOT_LOADS.labels("stores")
HOT_EVICTIONS = Counter(
    "memstream_hot_cache_evictions_total", "users dropped from the hot cache by its budget"
)

# --- dataflows (dataflows.ingest, dataflows.lifecycle) ----------------------------
FLOW_EVENTS = Counter(
    "memstream_dataflow_events_total",
    "dataflow inputs: in (read from Kafka), out (applied and durable), "
    "failed (task failed: extraction, switch, capacity, refused), dlq (sent to memory.dlq)",
    ["flow", "outcome"],
)
FLOW_BATCH = Histogram(
    "memstream_dataflow_batch_size",
    "items per batch at a step: in (a Kafka read), sink (one durable write)",
    ["flow", "step"],
    buckets=_SIZES,
)
FLOW_FRESHNESS = Histogram(
    "memstream_dataflow_freshness_seconds",
    "event time (the Kafka timestamp; a recall hit's time) to durable in the flow's sink",
    ["flow"],
    buckets=_FRESH,
)

FLOW_RESTARTS = Counter(
    "memstream_flow_restarts", "restarts of a dataflow after a failure", ["flow"]
)
FLOW_CRASH_LOOPING = Gauge(
    "memstream_flow_crash_looping",
    "1 while the flow restarted >= 3 times in 5 minutes (a crash loop; sinks.flow_health)",
    ["flow"],
)


class FlowMetrics:
    """The children of one flow, bound once (``FlowMetrics("ingest")``)."""

    def __init__(self, flow: str) -> None:
        self.read = FLOW_EVENTS.labels(flow, "in")
        self.out = FLOW_EVENTS.labels(flow, "out")
        self.failed = FLOW_EVENTS.labels(flow, "failed")
        self.dlq = FLOW_EVENTS.labels(flow, "dlq")
        self.batch_in = FLOW_BATCH.labels(flow, "in")
        self.batch_sink = FLOW_BATCH.labels(flow, "sink")
        self.freshness = FLOW_FRESHNESS.labels(flow)

    def fresh_since(self, event_s: list[float]) -> None:
        """Observe now minus each event time (epoch seconds; 0 = unknown, skipped)."""
        now = time.time()
        for t in event_s:
            if t > 0:
                self.freshness.observe(max(now - t, 0.0))


INGEST = FlowMetrics("ingest")
LIFECYCLE = FlowMetrics("lifecycle")

INGEST_STAGE = Counter(
    "memstream_ingest_stage_seconds",
    "wall seconds the ingest flow spent in each step (parse, window, extract, seal, "
    "embed_load, embed_model, write, sink_profile, sink_clickhouse, sink_milvus, sink_changes, "
    "sink_cache, sink_tasks); shares of their sum tell where ingest time goes",
    ["stage"],
)
_STAGES: dict[str, Counter] = {}


@contextmanager
def ingest_stage(stage: str) -> Iterator[None]:
    """Add the wall time of the block to ``memstream_ingest_stage_seconds{stage}``."""
    child = _STAGES.get(stage)
    if child is None:
        child = _STAGES[stage] = INGEST_STAGE.labels(stage)
    started = time.perf_counter()
    try:
        yield
    finally:
        child.inc(time.perf_counter() - started)


# --- models (models.llm, models.degrade, dataflows.ingest.consolidate) ------------
LLM_CALLS = Counter(
    "memstream_llm_calls_total",
    "calls of the configured LLM (rules included), by provider, task and outcome",
    ["provider", "task", "outcome"],
)
LLM_LATENCY = Histogram(
    "memstream_llm_call_seconds", "LLM call latency", ["provider", "task"], buckets=_SLOW
)
LLM_ERRORS = Counter(
    "memstream_llm_errors_total",
    "LLM calls that raised, by error type",
    ["provider", "task", "error"],
)
LLM_DEGRADED = Counter(
    "memstream_llm_degraded_total",
    "LLM failures absorbed: decide → append (ADD + hash dedup), summarize → join, "
    "profile → the rules' plan",
    ["task"],
)
DEGRADED_DECIDE = LLM_DEGRADED.labels("decide")
DEGRADED_SUMMARIZE = LLM_DEGRADED.labels("summarize")
DEGRADED_PROFILE = LLM_DEGRADED.labels("profile")


_PROVIDERS: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()


def _provider(llm: object) -> str:
    """``llm.name`` up to ``:``, worked out once per LLM object (``name`` may format)."""
    try:
        return _PROVIDERS[llm]
    except (KeyError, TypeError):  # TypeError: an object that takes no weak reference
        provider = str(getattr(llm, "name", type(llm).__name__)).split(":", 1)[0]
        try:
            _PROVIDERS[llm] = provider
        except TypeError:
            pass
        return provider


@contextmanager
def llm_call(llm: object, task: str) -> Iterator[None]:
    """Count and time one call of ``llm`` (``extract``, ``decide``, ``summarize``,
    ``profile``); the provider is its name up to ``:`` (``openai:gpt-4o`` counts as
    ``openai``)."""
    provider = _provider(llm)
    started = time.perf_counter()
    try:
        yield
    except Exception as exc:
        LLM_CALLS.labels(provider, task, "error").inc()
        LLM_ERRORS.labels(provider, task, type(exc).__name__).inc()
        raise
    else:
        LLM_CALLS.labels(provider, task, "ok").inc()
    finally:
        LLM_LATENCY.labels(provider, task).observe(time.perf_counter() - started)


# --- the keyed writer and the lifecycle (dataflows.ingest, dataflows.lifecycle) ---
MEMORY_EVICTIONS = Counter(
    "memstream_memory_evictions_total",
    "memories evicted by capacity, by where they went",
    ["to"],
)
EVICTED_ARCHIVED = MEMORY_EVICTIONS.labels("archived")
EVICTED_DELETED = MEMORY_EVICTIONS.labels("deleted")
CONSOLIDATIONS = Counter(
    "memstream_consolidations_total", "merged memories made by consolidation (one MERGE each)"
)
CONSOLIDATED_MEMBERS = Counter(
    "memstream_consolidated_members_total", "memories superseded by a consolidation"
)
STORE_ROWS_UNDECODABLE = Counter(
    "memstream_store_rows_undecodable_total",
    "stored memory rows a reader could not decode as stored (sinks.stored_rows): "
    "clamped (an instant beyond years 1..9999 UTC read as the store range's end) or "
    "skipped (left out of the answer)",
    ["action"],
)
STORE_ROWS_CLAMPED = STORE_ROWS_UNDECODABLE.labels("clamped")
STORE_ROWS_SKIPPED = STORE_ROWS_UNDECODABLE.labels("skipped")
LIFECYCLE_ACTIONS = Counter(
    "memstream_lifecycle_actions_total",
    "memories the lifecycle pass changed, by action (decayed, expired, purge_deleted, "
    "purge_archived)",
    ["action"],
)
LIFECYCLE_BY_ACTION = {
    a: LIFECYCLE_ACTIONS.labels(a)
    for a in ("decayed", "expired", "purge_deleted", "purge_archived")
}
