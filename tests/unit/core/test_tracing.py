"""core.tracing: traceparent in and out of Kafka headers, steps as children, batches as
links, failures marked by type only, and nothing at all when off."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from core import tracing
from core.settings import Settings
from tests.helpers.traces import recording


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with recording() as exporter:
        yield exporter


def _record_headers() -> list[tuple[str, bytes | None]]:
    """Kafka record headers as a consumer reads them: (str, bytes)."""
    return [(k, v.encode()) for k, v in tracing.headers().items()]


def test_a_step_continues_the_trace_of_the_record_it_reads(spans) -> None:
    with tracing.span("memstream.add", tracing.SERVER, user_id=7) as root:
        got = _record_headers()
    tp = tracing.traceparent_of([("replay_of", b"0:1"), *got])
    assert tp is not None and tp.startswith("00-")
    with tracing.step("ingest.parse", [tp], partition=3):
        with tracing.span("inner"):
            pass
    by_name = {s.name: s for s in spans.get_finished_spans()}
    parse, inner = by_name["ingest.parse"], by_name["inner"]
    assert parse.context.trace_id == root.get_span_context().trace_id
    assert parse.parent.span_id == root.get_span_context().span_id
    assert inner.parent.span_id == parse.context.span_id
    assert by_name["memstream.add"].kind.name == "SERVER"


def test_a_step_of_several_adds_links_the_others_and_a_batch_links_all(spans) -> None:
    tps = []
    for _ in range(3):
        with tracing.span("memstream.add"):
            tps.append(tracing.headers()["traceparent"])
    with tracing.step("ingest.write", [tps[0], tps[0], None, tps[1], tps[2]]):
        pass
    with tracing.batch("ingest.sink", tps + ["garbage", None], items=3):
        pass
    by_name = {s.name: s for s in spans.get_finished_spans()}
    adds = [s.context.trace_id for s in spans.get_finished_spans() if s.name == "memstream.add"]
    write, sink = by_name["ingest.write"], by_name["ingest.sink"]
    assert write.context.trace_id == adds[0]
    assert [link.context.trace_id for link in write.links] == adds[1:]
    assert sink.parent is None and sink.context.trace_id not in adds
    assert [link.context.trace_id for link in sink.links] == adds
    assert sink.attributes["traces"] == 3


def test_a_bad_traceparent_starts_a_trace_of_its_own(spans) -> None:
    for bad in (b"garbage", b"00-" + b"0" * 32 + b"-" + b"0" * 16 + b"-01", b"x" * 500):
        tp = tracing.traceparent_of([("traceparent", bad)])
        with tracing.step("ingest.parse", [tp]):
            pass
    assert all(s.parent is None for s in spans.get_finished_spans())


def test_a_failure_is_marked_by_its_type_never_its_message(spans) -> None:
    with pytest.raises(ValueError), tracing.span("recall.rank"):
        raise ValueError("my secret diary entry")
    (s,) = spans.get_finished_spans()
    assert s.status.status_code is StatusCode.ERROR
    assert s.status.description == "ValueError"
    assert not s.events  # no exception event with the message


def test_off_nothing_runs() -> None:
    assert tracing.setup(Settings(), "memstream-test") is False
    assert not tracing.enabled()
    assert tracing.headers() == {}
    assert (
        tracing.traceparent_of([("traceparent", b"00-" + b"1" * 32 + b"-" + b"1" * 16 + b"-01")])
        is None
    )
    with (
        tracing.span("x", user_id=1) as a,
        tracing.step("y", ["z"]) as b,
        tracing.batch("w", []) as c,
    ):
        assert a is b is c is None
    fn = len
    assert tracing.carry(fn) is fn


def test_setup_exports_by_otlp_http_to_the_endpoint() -> None:
    """A real OTLP/HTTP round trip: a local collector receives the span, decoded."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    got: list[tuple[str, bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append((self.path, self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_port}"
        assert tracing.setup(Settings(otel_endpoint=endpoint), "memstream-test") is True
        with tracing.span("memstream.add", tracing.SERVER, user_id=7):
            pass
        tracing.install(None)  # shuts the provider down: the batch leaves now
    finally:
        server.shutdown()
    (path, body) = got[0]
    assert path == "/v1/traces"
    req = ExportTraceServiceRequest.FromString(body)
    (resource,) = req.resource_spans
    names = [s.name for scope in resource.scope_spans for s in scope.spans]
    assert names == ["memstream.add"]
    service = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert service["service.name"] == "memstream-test"
