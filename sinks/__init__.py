"""Storage and messaging clients: ClickHouse, Milvus, Redis, Kafka, encryption.

Each store connects in ``setup()``, writes one batch per round trip, and raises a typed
:class:`sinks.errors.StoreError` subclass when its backend is unavailable, so callers
can tell backpressure from bad data. The same code takes an embedded target (chDB
directory, Milvus Lite file) or a server URL (``http://…``) — only the URL changes.
"""
