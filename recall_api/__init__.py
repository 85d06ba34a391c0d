"""The thin HTTP tier (FastAPI): recall, add, management, privacy and session endpoints.

One router per resource, dependencies declared once in ``deps``, errors mapped to the
envelope codes of DESIGN §6 in one place (``errors``). Health, readiness and
Prometheus metrics are served here too. It never imports ``dataflows``.
"""
