"""OpenTelemetry's in-memory exporter for the trace tests (docs/operations.md#traces):
``recording`` installs it as ``core.tracing``'s provider and takes it away again, and
``no_content`` walks every attribute of every span for the words a test wrote."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from core import tracing


def exporter_provider() -> tuple[InMemorySpanExporter, TracerProvider]:
    """A provider that hands every finished span to an in-memory exporter, at once."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


@contextmanager
def recording() -> Iterator[InMemorySpanExporter]:
    """Traces on, into the exporter yielded, for the block; off again after it."""
    exporter, provider = exporter_provider()
    tracing.install(provider)
    try:
        yield exporter
    finally:
        tracing.install(None)


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def children(exporter: InMemorySpanExporter, parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [
        s
        for s in exporter.get_finished_spans()
        if s.parent is not None and s.parent.span_id == parent.context.span_id
    ]


def no_content(exporter: InMemorySpanExporter, words: Iterable[str]) -> None:
    """Every attribute of every span (its links' and events' too) is an id, a count or a
    timing: none of ``words`` (the memory's, the query's, a tag's), no long string."""
    lowered = [w.lower() for w in words]
    for s in exporter.get_finished_spans():
        values: list[object] = [s.name, s.status.description or ""]
        values += list((s.attributes or {}).values())
        for link in s.links:
            values += list((link.attributes or {}).values())
        for event in s.events:
            values += [event.name, *(event.attributes or {}).values()]
        for v in values:
            assert isinstance(v, str | int | float | bool), (s.name, v)
            if isinstance(v, str):
                assert len(v) <= 128, (s.name, v)
                assert not any(w in v.lower() for w in lowered), (s.name, v)
