"""API error codes (docs/api.md#error-codes). The mapping from exceptions to codes lives in
recall_api."""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    OK = 0
    BAD_PARAMETER = 40001
    UNAUTHENTICATED = 40101
    SWITCHED_OFF = 40301
    CROSS_APP_CLOSED = 40302
    NOT_FOUND = 40401
    REQUEST_CONFLICT = 40901  # request_id reused with a different request (nothing changed)
    CAPACITY_FULL = 42901
    IMPORTANT_LIMIT = 42902
    RATE_LIMITED = 42910
    EXTRACTION_FAILED = 50001
    INTERNAL = 50000
    UNAVAILABLE = 50301
    RECALL_TIMEOUT = 50401

    @property
    def http_status(self) -> int:
        """HTTP status that goes with the code (the envelope's code is the precise one)."""
        return {0: 200}.get(self.value, int(str(self.value)[:3]))
