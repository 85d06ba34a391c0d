"""Traces of management commands and lifecycle passes (docs/operations.md#traces): a
command's API span and the writer's ``ingest.command`` share one trace across the Kafka
record; a pass is one trace with a span per stage; no span says a word of the memory or
a tag's value; off, nothing is recorded."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from core import tracing
from dataflows.lifecycle.scan import run_pass
from dataflows.lifecycle.submit import DirectVia, KafkaVia
from tests.helpers.lifecycle import T0, record, seed
from tests.helpers.traces import children, exporter_provider, named, no_content, recording
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

SECRET_WORDS = ("kayak", "Osprey", "garage", "Zanzibar")  # the content and a tag's value
STAGES = {
    "lifecycle.reconcile",
    "lifecycle.plan",
    "lifecycle.crowded",
    "lifecycle.apply",
    "lifecycle.sanitize",
}


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with recording() as exporter:
        yield exporter


def _structured(api, user_id: int) -> str:
    body = {
        "user_id": user_id,
        "content": "My kayak Osprey sleeps in the garage.",
        "custom_tags": {"harbour": "Zanzibar"},
    }
    resp = api.post("/memory/v1/add_structured", json=body).json()
    assert resp["code"] == 0, resp
    return resp["data"]["memory_id"]


def _api_span(exporter: InMemorySpanExporter, name: str, user_id: int) -> ReadableSpan:
    (root,) = [s for s in named(exporter, name) if s.attributes["user_id"] == user_id]
    return root


def _writer_span(exporter: InMemorySpanExporter, root: ReadableSpan, op: str) -> ReadableSpan:
    """The writer's ``ingest.command`` in ``root``'s trace, under the flow's
    ``ingest.write``, itself the child of ``root`` (the record's traceparent)."""
    trace_id = root.context.trace_id

    def found() -> ReadableSpan | None:
        for s in named(exporter, "ingest.command"):
            if s.context.trace_id == trace_id and s.attributes["op"] == op:
                return s
        return None

    cmd = wait_for(found, timeout=10, what=f"the writer's {op} span in the API's trace")
    (write,) = [
        s for s in named(exporter, "ingest.write") if s.context.span_id == cmd.parent.span_id
    ]
    assert write.parent is not None and write.parent.span_id == root.context.span_id
    return cmd


def test_a_structured_add_and_its_delete_are_traced_across_kafka(
    api, ingest, user_id, spans
) -> None:
    memory_id = _structured(api, user_id)
    root = _api_span(spans, "memstream.add_structured", user_id)
    assert root.kind.name == "SERVER" and root.attributes["op"] == "add_structured"
    assert root.attributes["command_id"].startswith("c_")
    added = _writer_span(spans, root, "add_structured")
    assert added.attributes["code"] == 0 and added.attributes["memories"] == 1
    assert added.attributes["user_id"] == user_id

    resp = api.post("/memory/v1/delete", json={"user_id": user_id, "memory_id": memory_id})
    assert resp.json()["code"] == 0, resp.text
    deleted = _api_span(spans, "memstream.delete", user_id)
    assert deleted.context.trace_id != root.context.trace_id  # a request, a trace
    assert _writer_span(spans, deleted, "delete").attributes["code"] == 0

    # a refused command: the answer's code on both sides
    resp = api.post(
        "/memory/v1/update", json={"user_id": user_id, "memory_id": "m_nope", "is_important": True}
    )
    code = resp.json()["code"]
    assert code != 0
    refused = _api_span(spans, "memstream.update", user_id)
    assert refused.attributes["code"] == code
    assert _writer_span(spans, refused, "update").attributes["code"] == code
    no_content(spans, SECRET_WORDS)


def test_a_command_joins_the_trace_of_a_caller_that_sends_one(api, ingest, user_id, spans) -> None:
    trace_id, span_id = "5bf92f3577b34da6a3ce929d0e0e4737", "00f067aa0ba902b8"
    memory_id = _structured(api, user_id)
    body = {"user_id": user_id, "memory_ids": [memory_id]}
    headers = {"traceparent": f"00-{trace_id}-{span_id}-01"}
    resp = api.post("/memory/v1/batch_delete", json=body, headers=headers)
    assert resp.json()["code"] == 0, resp.text
    root = _api_span(spans, "memstream.batch_delete", user_id)
    assert root.context.trace_id == int(trace_id, 16)
    assert root.parent is not None and root.parent.span_id == int(span_id, 16)
    _writer_span(spans, root, "delete")


def _pass_trace(exporter: InMemorySpanExporter) -> tuple[ReadableSpan, dict[str, ReadableSpan]]:
    (root,) = named(exporter, "lifecycle.pass")
    assert root.parent is None
    stages = {s.name: s for s in children(exporter, root)}
    assert set(stages) == STAGES
    return root, stages


def test_a_lifecycle_pass_is_one_trace_with_a_span_per_stage(
    runtime, ingest, user_id, spans
) -> None:
    seed(runtime, record(user_id, "My kayak Osprey sleeps in the garage."))
    day = T0 + timedelta(days=91)  # decayed below the threshold: archived
    summary = run_pass(runtime, day, KafkaVia(runtime.stores, 30), users=[user_id])
    assert summary["archived"] == 1 and summary["failed_commands"] == 0, summary
    root, stages = _pass_trace(spans)
    assert root.attributes["archived"] == 1 and root.attributes["users"] == 1
    assert "reconciled.orphans" in root.attributes
    assert stages["lifecycle.plan"].attributes["due"] == 1
    assert stages["lifecycle.apply"].attributes["commands"] == 1
    # the writer's span, across Kafka, in the pass's trace under its apply stage
    cmd = _writer_span_under(spans, stages["lifecycle.apply"], "lifecycle")
    assert cmd.attributes["code"] == 0 and cmd.attributes["user_id"] == user_id
    no_content(spans, SECRET_WORDS)

    spans.clear()  # in-process (memstream lifecycle run): the command under the stage
    # the first is archived already: only this one is due
    seed(runtime, record(user_id, "Zanzibar garage, second kayak.", weight=0.05))
    summary = run_pass(runtime, day, DirectVia(runtime), users=[user_id])
    assert summary["archived"] == 1, summary
    _, stages = _pass_trace(spans)
    (cmd,) = children(spans, stages["lifecycle.apply"])
    assert cmd.name == "ingest.command" and cmd.attributes["op"] == "lifecycle"
    no_content(spans, SECRET_WORDS)


def _writer_span_under(
    exporter: InMemorySpanExporter, stage: ReadableSpan, op: str
) -> ReadableSpan:
    def found() -> ReadableSpan | None:
        for write in children(exporter, stage):
            if write.name == "ingest.write":
                for s in children(exporter, write):
                    if s.name == "ingest.command" and s.attributes["op"] == op:
                        return s
        return None

    return wait_for(found, timeout=10, what=f"the writer's {op} span under the pass")


def test_off_commands_and_passes_record_nothing(runtime, api, ingest, user_id) -> None:
    exporter, provider = exporter_provider()
    tracing.install(provider)
    tracing.install(None)  # as setup leaves it with no otel_endpoint
    memory_id = _structured(api, user_id)
    api.post("/memory/v1/delete", json={"user_id": user_id, "memory_id": memory_id})
    run_pass(runtime, T0, KafkaVia(runtime.stores, 30), users=[user_id])
    assert exporter.get_finished_spans() == ()
