"""The counting helpers of core.metrics and the places that call them, on plain objects:
an LLM call's outcome and error type, a decide that degrades to append, freshness that
skips unknown event times, the query-embedding cache's hits and misses, and the breaker
state the gauge reads."""

from __future__ import annotations

import time

import numpy as np
import pytest
from prometheus_client import REGISTRY

from core import metrics
from memstream.schemas.facts import ChatMessage
from models.degrade import decide_or_degrade
from models.errors import LLMUnavailable
from models.llm.base import PromptedLLM
from recall_api.batcher import QueryBatcher
from recall_api.breaker import CircuitBreaker


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


class DownLLM(PromptedLLM):
    """A prompted provider whose model never answers."""

    @property
    def name(self) -> str:
        return "down:model-x"

    def _complete(self, messages: list[ChatMessage]) -> str:
        raise LLMUnavailable("connection refused")


def test_an_llm_call_counts_its_outcome_its_error_type_and_its_time() -> None:
    before = {
        k: sample(n, **lb)
        for k, n, lb in [
            ("ok", "memstream_llm_calls_total", dict(provider="down", task="t", outcome="ok")),
            ("err", "memstream_llm_calls_total", dict(provider="down", task="t", outcome="error")),
            (
                "type",
                "memstream_llm_errors_total",
                dict(provider="down", task="t", error="KeyError"),
            ),
            ("n", "memstream_llm_call_seconds_count", dict(provider="down", task="t")),
        ]
    }
    llm = DownLLM()
    with metrics.llm_call(llm, "t"):
        pass
    with pytest.raises(KeyError), metrics.llm_call(llm, "t"):
        raise KeyError("x")
    assert (
        sample("memstream_llm_calls_total", provider="down", task="t", outcome="ok")
        == before["ok"] + 1
    )
    assert (
        sample("memstream_llm_calls_total", provider="down", task="t", outcome="error")
        == before["err"] + 1
    )
    assert (
        sample("memstream_llm_errors_total", provider="down", task="t", error="KeyError")
        == before["type"] + 1
    )
    assert sample("memstream_llm_call_seconds_count", provider="down", task="t") == before["n"] + 2


def test_a_decide_that_fails_degrades_to_append_and_is_counted() -> None:
    labels = dict(provider="down", task="decide")
    degraded = sample("memstream_llm_degraded_total", task="decide")
    errors = sample("memstream_llm_errors_total", **labels, error="LLMUnavailable")
    res = decide_or_degrade(DownLLM(), "User likes tea", [("m_1", "User likes coffee")])
    assert res.degraded and [d.op.value for d in res.decisions] == ["ADD"]
    assert sample("memstream_llm_degraded_total", task="decide") == degraded + 1
    assert sample("memstream_llm_errors_total", **labels, error="LLMUnavailable") == errors + 1


def test_freshness_observes_known_event_times_only() -> None:
    flow = metrics.FlowMetrics("unit-test-flow")
    count = "memstream_dataflow_freshness_seconds_count"
    total = "memstream_dataflow_freshness_seconds_sum"
    flow.fresh_since([0.0, time.time() - 30, 0.0])
    assert sample(count, flow="unit-test-flow") == 1
    assert 29 <= sample(total, flow="unit-test-flow") < 300  # the one event, ~30 s old


class Embedder:
    query_cache = None  # keeps none: the batcher makes its own

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(4, dtype=np.float32) / 2

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.embed_query(t) for t in texts])


def test_the_query_embedding_cache_counts_hits_and_misses() -> None:
    hit = sample("memstream_query_embedding_cache_total", result="hit")
    miss = sample("memstream_query_embedding_cache_total", result="miss")
    batcher = QueryBatcher(Embedder(), window_ms=0.1)
    try:
        for _ in range(3):
            batcher.embed("what do I like?", timeout=10)
    finally:
        batcher.close()
    assert sample("memstream_query_embedding_cache_total", result="miss") == miss + 1
    assert sample("memstream_query_embedding_cache_total", result="hit") == hit + 2


def test_the_breaker_gauge_reads_the_breakers_state_when_scraped() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failures=2, window_s=10, open_s=5, clock=lambda: now[0])
    breaker.export_state()
    assert sample("memstream_recall_breaker_state") == 0  # closed
    breaker.failure()
    breaker.failure()
    assert sample("memstream_recall_breaker_state") == 2  # open
    now[0] = 6.0
    assert sample("memstream_recall_breaker_state") == 1  # half-open after the cool-down
    assert breaker.allow()
    breaker.success()
    assert sample("memstream_recall_breaker_state") == 0


def test_an_ingest_stage_adds_its_wall_time_even_when_it_raises() -> None:
    def seconds(stage: str) -> float:
        return (
            REGISTRY.get_sample_value("memstream_ingest_stage_seconds_total", {"stage": stage})
            or 0.0
        )

    before = seconds("probe")
    with metrics.ingest_stage("probe"):
        time.sleep(0.02)
    with pytest.raises(RuntimeError), metrics.ingest_stage("probe"):
        time.sleep(0.01)
        raise RuntimeError("a failed step still took its time")
    assert 0.03 <= seconds("probe") - before < 1.0
