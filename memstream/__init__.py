"""memstream's Python client (``Client``, ``AsyncClient``) and MCP server (``memstream mcp``).

This package talks to a memstream API over HTTP; it imports nothing of the server
(only ``memstream.schemas``, the shared shapes), so an agent can depend on it alone.
"""

from memstream._transport import NO_RETRY, RetryPolicy
from memstream.client import AsyncClient, Client
from memstream.errors import (
    ApiError,
    MemstreamError,
    NotFound,
    ProtocolError,
    RateLimited,
    TaskPending,
    TransportError,
    Unauthenticated,
    Unavailable,
)

__all__ = [
    "NO_RETRY",
    "ApiError",
    "AsyncClient",
    "Client",
    "MemstreamError",
    "NotFound",
    "ProtocolError",
    "RateLimited",
    "RetryPolicy",
    "TaskPending",
    "TransportError",
    "Unauthenticated",
    "Unavailable",
]
