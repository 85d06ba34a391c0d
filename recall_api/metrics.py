"""Prometheus metrics of the API process (served at GET /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter("memstream_http_requests_total", "HTTP requests", ["route", "code"])
LATENCY = Histogram(
    "memstream_http_request_seconds",
    "HTTP request latency",
    ["route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
READY = Gauge("memstream_dependency_up", "1 when the dependency answered", ["dependency"])
