"""Prometheus metrics of the API process (served at GET /metrics); defined in core.metrics."""

from __future__ import annotations

from core.metrics import DEPENDENCY_UP as READY
from core.metrics import HTTP_LATENCY as LATENCY
from core.metrics import HTTP_REQUESTS as REQUESTS

__all__ = ["LATENCY", "READY", "REQUESTS"]
