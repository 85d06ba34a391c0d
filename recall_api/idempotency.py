"""``request_id`` belongs to its caller
(docs/api.md#retrying-and-idempotent-writes-request_id).

A write's ids (the command id of a management write, the task id of an ``add``) are
derived from (tenant, caller, user, endpoint, request_id): the caller is the API key's
id when keys are on, else the body's ``app_id``, so one app's request id never meets
another app's memory or task. The request itself is remembered by its fingerprint (a
hash of the canonical body without ``request_id``): the same id with the same request
answers as the first time (the answer is kept), with another request 40901 and nothing
is sent.

Redis is the fast path and a cache. When it was lost (flushed, restarted empty), a
resend is sent again under the same derived id and the keyed writer decides durably:
an ``add`` event's memory ids derive from its task id (a replay writes nothing twice),
an ``add_structured`` whose memory already exists with other content answers 40901
(``dataflows.ingest.commands``), and an update or delete applied again sets the same
values (harmless); only a different update/delete body under a reused id is then not
detected.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping

import redis

from memstream.schemas.errors import ErrorCode
from memstream.schemas.json_types import JsonObject, JsonValue
from memstream.schemas.tenants import scoped
from recall_api.errors import ApiError

TTL_S = 24 * 3600  # how long a request id is remembered (a client's retries fit in it)


def new_request_id() -> str:
    return f"r_{uuid.uuid4().hex}"


def fingerprint(endpoint: str, user_id: int, body: Mapping[str, JsonValue]) -> str:
    """A hash of the canonical request (sorted keys, ``request_id`` left out): a write's
    JSON body, or the command payload it becomes (``recall_api.commands.wire``)."""
    canon = {k: v for k, v in body.items() if k != "request_id"}
    raw = json.dumps([endpoint, user_id, canon], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()


def caller_identity(kid: str, app_id: str | None) -> str:
    """Who owns a request id: the key (keys on), else the app the body names."""
    return f"k:{kid}" if kid else f"a:{app_id or ''}"


def scoped_id(
    prefix: str, tenant: str, identity: str, user_id: int, endpoint: str, request_id: str
) -> str:
    """The write's id: never the same for two callers, users, endpoints or tenants."""
    raw = json.dumps([tenant, identity, user_id, endpoint, request_id], separators=(",", ":"))
    return prefix + hashlib.sha256(raw.encode()).hexdigest()[:32]


class Idempotency:
    """The Redis record of one write id: its fingerprint and, once known, its answer."""

    def __init__(self, client: redis.Redis, tenant: str, write_id: str, fp: str):
        self.client = client
        self.key = scoped(tenant, f"idem:{write_id}")
        self.fp = fp

    def claim(self) -> JsonObject | None:
        """Record the fingerprint (first caller wins); 40901 when the id was used for
        another request; the first answer when there is one, else None (send it)."""
        pipe = self.client.pipeline()
        pipe.hsetnx(self.key, "fp", self.fp)
        pipe.expire(self.key, TTL_S)
        pipe.hgetall(self.key)
        _, _, rec = pipe.execute()
        if rec.get("fp") != self.fp:
            raise ApiError(
                ErrorCode.REQUEST_CONFLICT,
                "request_id was already used for a different request (nothing changed)",
            )
        return json.loads(rec["answer"]) if rec.get("answer") else None

    def remember(self, answer: Mapping[str, JsonValue]) -> None:
        """Keep the answer, for a resend; a lost record only costs a resend to the writer."""
        try:
            self.client.hset(self.key, "answer", json.dumps(answer, default=str))
            self.client.expire(self.key, TTL_S)
        except redis.RedisError:
            pass
