"""Instants as the rules see them: timezone-aware UTC datetimes and epoch milliseconds.

Every rule that compares two instants (decay, eviction order, as-of validity) goes
through here, so a naive datetime is refused at the first rule it reaches instead of
being silently read as local time, and Milvus (INT64 epoch ms) and the in-memory cache
compare the very same integers.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

SECONDS_PER_DAY = 86_400.0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def require_aware(dt: datetime, name: str = "datetime") -> datetime:
    """Return ``dt`` in UTC; raise ValueError when it carries no timezone."""
    if dt.tzinfo is None or dt.tzinfo.utcoffset(dt) is None:
        raise ValueError(f"{name} must be timezone-aware (UTC), got naive {dt.isoformat()}")
    return dt.astimezone(UTC)


def epoch_ms(dt: datetime) -> int:
    """Milliseconds since the Unix epoch, floored (the encoding of Milvus INT64 time fields)."""
    delta = require_aware(dt) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def from_epoch_ms(ms: int) -> datetime:
    """Inverse of :func:`epoch_ms` (UTC)."""
    return _EPOCH + timedelta(milliseconds=ms)


def days_between(start: datetime, end: datetime) -> float:
    """Fractional days from ``start`` to ``end`` (negative when ``end`` is earlier)."""
    return (require_aware(end) - require_aware(start)).total_seconds() / SECONDS_PER_DAY
