"""OpenTelemetry traces, off by default (docs/operations.md#traces).

With ``otel_endpoint`` set, ``setup`` installs an SDK tracer that exports by OTLP/HTTP
through a BatchSpanProcessor (spans leave on a background thread, in batches). Unset,
no SDK is loaded and every helper here returns at once: ``span`` hands back a shared
null context, ``headers`` an empty dict, ``traceparent_of`` None.

One add is one trace: the API's span, the W3C ``traceparent`` header of its Kafka record
(``headers``/``traceparent_of``), and the ingest steps as its children (``step``). A
sink write covers the adds of many traces, so it is a span of its own that links to
them (``batch``). Spans carry ids, counts and timings, never memory content or queries
(docs/security.md): call sites pass only such attributes.

The tracer is this module's, never the process-global provider (which can be set only
once), so a test installs an in-memory exporter and takes it away again (``install``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
    get_current_span,
    set_span_in_context,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from core.settings import Settings

TRACEPARENT = "traceparent"
SERVER = SpanKind.SERVER  # the span of an API request
Attr = str | int | float | bool

P = ParamSpec("P")
R = TypeVar("R")
_PROPAGATOR = TraceContextTextMapPropagator()
_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()
_tracer: Tracer | None = None
_provider: TracerProvider | None = None


def setup(settings: Settings, service: str) -> bool:
    """Install the OTLP exporter when ``otel_endpoint`` is set; True when traces are on.
    An endpoint without a path gets OTLP/HTTP's ``/v1/traces``."""
    endpoint = settings.otel_endpoint
    if not endpoint or _tracer is not None:
        return _tracer is not None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if urlsplit(endpoint).path in ("", "/"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    install(provider)
    return True


def install(provider: TracerProvider | None) -> None:
    """Trace through ``provider`` from now on; None turns traces off (and flushes, then
    shuts down the one installed)."""
    global _tracer, _provider
    old, _provider = _provider, provider
    _tracer = provider.get_tracer("memstream") if provider is not None else None
    if old is not None and old is not provider:
        old.shutdown()


def enabled() -> bool:
    return _tracer is not None


def span(name: str, kind: SpanKind = SpanKind.INTERNAL, **attrs: Attr) -> Any:
    """A span under the current one (a new trace when there is none), as a context
    manager yielding the Span; the shared null context when traces are off."""
    if _tracer is None:
        return _OFF
    return _started(name, get_current_span().get_span_context(), [], attrs, kind)


def annotate(**attrs: Attr) -> None:
    """Set attributes on the current span (ids and counts only)."""
    if _tracer is not None:
        get_current_span().set_attributes(attrs)


def headers() -> dict[str, str]:
    """The current span's W3C ``traceparent`` as Kafka record headers ({} when off)."""
    if _tracer is None:
        return {}
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier


def attach_caller(http_headers: Iterable[tuple[bytes, bytes]]) -> object | None:
    """Make a caller's W3C ``traceparent`` (an HTTP request header) the current context,
    so the request's spans join the caller's trace; a token for ``detach`` (None when
    off or none was sent; a malformed one is ignored)."""
    if _tracer is None:
        return None
    for key, value in http_headers:
        if key == b"traceparent" and len(value) <= 128:
            found = _PROPAGATOR.extract({TRACEPARENT: value.decode("latin-1")})
            return otel_context.attach(found)
    return None


def detach(token: object | None) -> None:
    if token is not None:
        otel_context.detach(token)  # type: ignore[arg-type]


def traceparent_of(kafka_headers: Sequence[tuple[str, bytes | None]] | None) -> str | None:
    """The ``traceparent`` header of a Kafka record (None when off or absent)."""
    if _tracer is None or not kafka_headers:
        return None
    for key, value in kafka_headers:
        if key == TRACEPARENT and value and len(value) <= 128:
            return value.decode("ascii", "replace")
    return None


def _context_of(traceparent: str | None) -> SpanContext | None:
    if not traceparent:
        return None
    ctx = get_current_span(_PROPAGATOR.extract({TRACEPARENT: traceparent})).get_span_context()
    return ctx if ctx.is_valid else None


def _distinct(traceparents: Iterable[str | None]) -> list[SpanContext]:
    seen: dict[int, SpanContext] = {}
    for tp in traceparents:
        ctx = _context_of(tp)
        if ctx is not None:
            seen.setdefault(ctx.trace_id, ctx)
    return list(seen.values())


@contextlib.contextmanager
def _started(
    name: str,
    parent: SpanContext | None,
    links: list[Link],
    attrs: dict[str, Attr],
    kind: SpanKind = SpanKind.INTERNAL,
) -> Iterator[Span]:
    """The span, current while the block runs. A failure marks it with the exception's
    type only: an exception's message may quote content (docs/security.md)."""
    assert _tracer is not None
    ctx = set_span_in_context(NonRecordingSpan(parent)) if parent and parent.is_valid else Context()
    with _tracer.start_as_current_span(
        name,
        context=ctx,
        kind=kind,
        links=links,
        attributes=attrs,
        record_exception=False,
        set_status_on_exception=False,
    ) as sp:
        try:
            yield sp
        except BaseException as exc:
            sp.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def step(name: str, traceparents: Iterable[str | None], **attrs: Attr) -> Any:
    """A flow step's span: a child of the trace of the first add it carries (from the
    record's ``traceparent``), linked to the traces of the others."""
    if _tracer is None:
        return _OFF
    found = _distinct(traceparents)
    parent = found[0] if found else None
    return _started(name, parent, [Link(c) for c in found[1:]], attrs)


def batch(name: str, traceparents: Iterable[str | None], **attrs: Attr) -> Any:
    """A span of its own (a new trace) that links to the traces of the adds it carries:
    a sink write, which covers many."""
    if _tracer is None:
        return _OFF
    found = _distinct(traceparents)
    return _started(name, None, [Link(c) for c in found], {**attrs, "traces": len(found)})


def carry(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run in the current context, for another thread (an executor does not
    carry it); ``fn`` itself when traces are off."""
    if _tracer is None:
        return fn
    ctx = contextvars.copy_context()

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return ctx.run(fn, *args, **kwargs)

    return run
