"""The thin HTTP tier (FastAPI): recall, add, management, privacy and session endpoints.

One router per resource, dependencies declared once in ``deps``, errors mapped to the
envelope codes (docs/api.md#error-codes) in one place (``errors``). Health, readiness and
Prometheus metrics are served here too. It never imports ``dataflows``.
"""
