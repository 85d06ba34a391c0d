"""OpenTelemetry traces (docs/operations.md#traces): an add is one trace from the API
through its Kafka record and the ingest flow; the sink write links to it; a recall is one
trace with its stages; spans never carry content; off, nothing is recorded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from core import tracing
from core.settings import Settings
from tests.helpers.traces import exporter_provider, named, no_content, recording
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

SECRET_WORDS = ("kayak", "Osprey", "garage", "boat")  # the add's content and the query


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with recording() as exporter:
        yield exporter


def _add(api, user_id: int, headers: dict[str, str] | None = None) -> str:
    text = "I keep a red kayak named Osprey in the garage."
    body = {"user_id": user_id, "messages": [{"role": "user", "content": text}]}
    resp = api.post("/memory/v1/add", json=body, headers=headers)
    assert resp.json()["code"] == 0, resp.text
    task_id = resp.json()["data"]["task_id"]

    def done():
        got = api.get(f"/memory/v1/tasks/{task_id}").json()["data"]
        return got if got["status"] in ("done", "failed") else None

    assert wait_for(done, what=task_id)["status"] == "done"
    return task_id


def test_an_add_is_one_trace_from_the_api_through_kafka_and_the_flow(
    api, ingest, user_id, spans
) -> None:
    task_id = _add(api, user_id)
    (root,) = [s for s in named(spans, "memstream.add") if s.attributes["task_id"] == task_id]
    trace_id = root.context.trace_id
    steps = ("ingest.parse", "ingest.extract", "ingest.embed", "ingest.write")

    def flow_spans():
        got = {n: [s for s in named(spans, n) if s.context.trace_id == trace_id] for n in steps}
        return got if all(got.values()) else None

    found = wait_for(flow_spans, timeout=10, what="the flow's spans in the add's trace")
    (parse,) = found["ingest.parse"]
    assert parse.parent is not None and parse.parent.span_id == root.context.span_id
    assert root.attributes["user_id"] == user_id

    def sink_span():  # the write's own trace, linked to the add's
        for s in named(spans, "ingest.sink"):
            if any(link.context.trace_id == trace_id for link in s.links):
                return s
        return None

    sink = wait_for(sink_span, timeout=10, what="a sink span linked to the add's trace")
    assert sink.context.trace_id != trace_id and sink.parent is None
    no_content(spans, SECRET_WORDS)


def test_an_add_joins_the_trace_of_a_caller_that_sends_one(api, ingest, user_id, spans) -> None:
    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    _add(api, user_id, {"traceparent": f"00-{trace_id}-{span_id}-01"})
    (root,) = named(spans, "memstream.add")
    assert root.context.trace_id == int(trace_id, 16)
    assert root.parent is not None and root.parent.span_id == int(span_id, 16)
    wait_for(
        lambda: any(s.context.trace_id == int(trace_id, 16) for s in named(spans, "ingest.write")),
        timeout=10,
        what="the flow's spans in the caller's trace",
    )
    _add(api, user_id + 1, {"traceparent": "not a traceparent"})  # ignored: a trace of its own
    (other,) = [s for s in named(spans, "memstream.add") if s.attributes["user_id"] != user_id]
    assert other.parent is None and other.context.trace_id != int(trace_id, 16)


def test_a_recall_is_one_trace_with_its_stages(api, ingest, user_id, spans) -> None:
    _add(api, user_id)
    spans.clear()
    body = {"user_id": user_id, "query": "which boat do I own?"}
    resp = api.post("/memory/v1/recall", json=body)
    assert resp.json()["code"] == 0, resp.text
    (root,) = named(spans, "memstream.recall")
    children = {
        s.name
        for s in spans.get_finished_spans()
        if s.parent is not None and s.parent.span_id == root.context.span_id
    }
    assert {"recall.cache", "recall.search", "recall.rank"} <= children
    assert all(s.context.trace_id == root.context.trace_id for s in spans.get_finished_spans())
    assert root.attributes["hits"] >= 1
    no_content(spans, SECRET_WORDS)


def test_without_an_endpoint_nothing_is_recorded(api, ingest, user_id) -> None:
    exporter, provider = exporter_provider()
    tracing.install(provider)
    tracing.install(None)  # as setup leaves it with no otel_endpoint
    assert tracing.setup(Settings(otel_endpoint=""), "memstream-test") is False
    assert not tracing.enabled() and tracing.headers() == {}
    with tracing.span("memstream.add", user_id=user_id) as sp:
        assert sp is None
    _add(api, user_id)
    api.post("/memory/v1/recall", json={"user_id": user_id, "query": "which boat?"})
    assert exporter.get_finished_spans() == ()
