"""Rate limits per API key, and per user within a key (docs/security.md#rate-limits).

Built on the maintained ``limits`` library (fixed windows in Redis: one INCR+EXPIRE per
bucket, shared by every API process). Two families of buckets, so a burst of writes
never makes recall wait: ``recall`` (POST /memory/v1/recall, and POST
/memory/v1/context, which recalls for an agent's turn) and ``write`` (every other
/memory endpoint). Each has a per-key and a per-(key, user) limit, settings
``rate_limit_{key,user}_{recall,write}`` in the ``limits`` notation ("200/second";
"" = none). Past a limit: 42910 with ``Retry-After`` (seconds to the window's end).

Only keyed callers are limited: with no key configured the API serves loopback only.
If Redis does not answer, the limiter lets requests through (fail open, logged once a
minute): recall from the hot cache must not stop because a counter cannot be counted;
writes then meet the outage themselves (50301).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.storage import storage_from_string
from limits.strategies import FixedWindowRateLimiter

from core.settings import Settings
from memstream.schemas.errors import ErrorCode
from recall_api.errors import ApiError

log = logging.getLogger(__name__)
RECALL_PATH = "/memory/v1/recall"
RECALL_PATHS = frozenset({RECALL_PATH, "/memory/v1/context"})
FAIL_OPEN_LOG_S = 60.0


def kind_of(path: str) -> str:
    return "recall" if path.rstrip("/") in RECALL_PATHS else "write"


def _item(text: str) -> RateLimitItem | None:
    return parse(text) if text.strip() else None


@dataclass(frozen=True)
class Rules:
    per_key: RateLimitItem | None
    per_user: RateLimitItem | None


class RateLimits:
    def __init__(self, settings: Settings):
        self.rules = {
            "recall": Rules(
                _item(settings.rate_limit_key_recall), _item(settings.rate_limit_user_recall)
            ),
            "write": Rules(
                _item(settings.rate_limit_key_write), _item(settings.rate_limit_user_write)
            ),
        }
        storage = storage_from_string(
            settings.redis_url, socket_timeout=0.2, socket_connect_timeout=0.2
        )
        self._limiter = FixedWindowRateLimiter(storage)
        self._warned = 0.0

    def check(self, kid: str, kind: str, user_id: int | None) -> None:
        """Count one request; ApiError 42910 (with retry_after) past a limit."""
        rules = self.rules[kind]
        buckets: list[tuple[RateLimitItem | None, tuple[str, ...]]] = [(rules.per_key, (kind, kid))]
        if user_id is not None:
            buckets.append((rules.per_user, (kind, kid, str(user_id))))
        try:
            for item, ids in buckets:
                if item is not None and not self._limiter.hit(item, *ids):
                    reset = self._limiter.get_window_stats(item, *ids).reset_time
                    wait = max(1, math.ceil(reset - time.time()))
                    scope = "this key" if len(ids) == 2 else f"user {user_id} on this key"
                    raise ApiError(
                        ErrorCode.RATE_LIMITED,
                        f"rate limit {item} for {kind} reached by {scope}; retry in {wait} s",
                        {"limit": str(item), "retry_after_s": wait},
                        retry_after=wait,
                    )
        except ApiError:
            raise
        except Exception as exc:  # Redis down or slow: fail open, see the module doc
            now = time.monotonic()
            if now - self._warned > FAIL_OPEN_LOG_S:
                self._warned = now
                log.warning(
                    "rate limiter unavailable; letting requests through",
                    extra={"fields": {"error": type(exc).__name__}},
                )
