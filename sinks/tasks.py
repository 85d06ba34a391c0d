"""Status of `add` tasks in Redis: sending → accepted → processing → done | failed.

``sending``: the API produced the event and waits for Kafka's acknowledgement (a task
left there never landed: a resend of its request id produces it again); ``accepted``:
durable in Kafka, the ingest's from now on.

Redis is a cache: a task whose status was lost (Redis flushed) reads as unknown, the
memories themselves are safe in ClickHouse. Entries expire after a week. A task belongs
to a tenant: its key is scoped by it (``memstream.schemas.tenants.scoped``), and its hash says it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import NotRequired, TypedDict, cast

import redis
from redis.typing import EncodableT, FieldT

from memstream.schemas.tenants import DEFAULT_TENANT, scoped
from sinks.redis_store import RedisStore

TTL_S = 7 * 24 * 3600
LANDED = ("accepted", "processing", "done")  # the event is in Kafka (or already applied)
# sending → accepted, unless the ingest got there first (processing, done)
_SENT = """
if redis.call('HGET', KEYS[1], 'status') == 'sending' then
  redis.call('HSET', KEYS[1], 'status', 'accepted', 'updated_at', ARGV[1])
end
return 1
"""
COUNT_FIELDS = ("added", "updated", "superseded", "skipped", "evicted")


class TaskStatusRow(TypedDict):
    """A task's status as read back (``memstream.schemas.responses.TaskStatus`` validates it): the
    counts once it finished, the code and reason when it failed."""

    task_id: str
    status: str
    user_id: int | None
    tenant_id: str
    updated_at: float
    app_id: NotRequired[str]
    kid: NotRequired[str]
    counts: NotRequired[dict[str, int]]
    memory_ids: NotRequired[list[str]]
    degraded: NotRequired[bool]
    warnings: NotRequired[list[str]]
    code: NotRequired[int]
    reason: NotRequired[str]


@dataclass
class TaskResult:
    task_id: str
    user_id: int
    added: int = 0
    updated: int = 0
    superseded: int = 0
    skipped: int = 0
    evicted: int = 0
    failed: bool = False
    code: int = 0
    reason: str = ""
    degraded: bool = False
    memory_ids: list[str] = field(default_factory=list)
    tenant_id: str = DEFAULT_TENANT
    # what the caller should know though nothing failed (an entity type the rules ignore)
    warnings: list[str] = field(default_factory=list)

    def warn(self, lines: Iterable[str]) -> None:
        self.warnings += [w for w in lines if w not in self.warnings]

    def merge(self, other: TaskResult) -> None:
        for name in COUNT_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.memory_ids.extend(other.memory_ids)
        self.degraded = self.degraded or other.degraded
        self.warn(other.warnings)
        if other.failed:
            self.failed, self.code, self.reason = True, other.code, other.reason


def _key(task_id: str, tenant: str) -> str:
    return scoped(tenant, f"task:{task_id}")


class TaskStore:
    def __init__(self, redis_store: RedisStore):
        self._redis = redis_store

    def accepted(
        self,
        task_id: str,
        user_id: int,
        *,
        tenant: str,
        app_id: str | None = None,
        kid: str = "",
        sending: bool = False,
    ) -> None:
        """``app_id`` and ``kid`` (the API key's id) say who may read the status;
        ``sending``: not acknowledged by Kafka yet (``sent`` says when it is)."""
        now = time.time()
        pipe = self._redis.client.pipeline()
        status = "sending" if sending else "accepted"
        mapping: dict[FieldT, EncodableT] = {
            "status": status,
            "user_id": user_id,
            "accepted_at": now,
            "updated_at": now,
        }
        mapping["tenant_id"] = tenant
        if app_id:
            mapping["app_id"] = app_id
        if kid:
            mapping["kid"] = kid
        pipe.hset(_key(task_id, tenant), mapping=mapping)
        pipe.expire(_key(task_id, tenant), TTL_S)
        pipe.execute()

    def sent(self, task_id: str, *, tenant: str) -> None:
        """Kafka acknowledged the task's event: ``sending`` becomes ``accepted``."""
        self._redis.client.eval(_SENT, 1, _key(task_id, tenant), time.time())

    def processing(self, tasks: list[tuple[str, str]]) -> None:
        """Mark tasks ``(tenant, task_id)`` as picked up; a finished one (a replay) stays."""
        if not tasks:
            return
        keys = [_key(tid, tenant) for tenant, tid in tasks]
        client = self._redis.client
        pipe = client.pipeline()
        for key in keys:
            pipe.hget(key, "status")
        states = pipe.execute()
        now = time.time()
        pipe = client.pipeline()
        for key, state in zip(keys, states, strict=True):
            if state in (None, "sending", "accepted"):
                pipe.hset(key, mapping={"status": "processing", "updated_at": now})
                pipe.expire(key, TTL_S)
        pipe.execute()

    def finish(self, results: list[TaskResult]) -> None:
        if not results:
            return
        client = self._redis.client
        pipe = client.pipeline()
        for r in results:
            pipe.hget(_key(r.task_id, r.tenant_id), "status")
        states = pipe.execute()
        now = time.time()
        pipe = client.pipeline()
        for r, state in zip(results, states, strict=True):
            if state in ("done", "failed"):
                continue  # a replay after a crash: the first outcome stands
            data = asdict(r)
            mapping: dict[FieldT, EncodableT] = {
                "status": "failed" if r.failed else "done",
                "user_id": r.user_id,
                "tenant_id": r.tenant_id,
                "updated_at": now,
                "counts": json.dumps({n: data[n] for n in COUNT_FIELDS}),
                "memory_ids": json.dumps(r.memory_ids[:1000]),
                "degraded": int(r.degraded),
                "warnings": json.dumps(r.warnings[:20], ensure_ascii=False),
                "code": r.code,
                "reason": r.reason,
            }
            pipe.hset(_key(r.task_id, r.tenant_id), mapping=mapping)
            pipe.expire(_key(r.task_id, r.tenant_id), TTL_S)
        pipe.execute()

    def get(self, task_id: str, *, tenant: str) -> TaskStatusRow | None:
        try:
            # decode_responses=True (sinks.redis_store): str fields and values
            raw = cast(dict[str, str], self._redis.client.hgetall(_key(task_id, tenant)))
        except redis.RedisError:
            return None
        return _status(task_id, raw)

    def get_many(self, task_ids: list[str], *, tenant: str) -> dict[str, TaskStatusRow]:
        """The statuses of several tasks in one round trip; unknown ones are left out."""
        try:
            pipe = self._redis.client.pipeline(transaction=False)
            for task_id in task_ids:
                pipe.hgetall(_key(task_id, tenant))
            raws = pipe.execute()
        except redis.RedisError:
            return {}
        found = (_status(t, raw) for t, raw in zip(task_ids, raws, strict=True))
        return {s["task_id"]: s for s in found if s is not None}


def _status(task_id: str, raw: dict[str, str]) -> TaskStatusRow | None:
    if not raw:
        return None
    out: TaskStatusRow = {
        "task_id": task_id,
        "status": raw.get("status", "accepted"),
        "user_id": int(raw["user_id"]) if raw.get("user_id") else None,
        "tenant_id": raw.get("tenant_id") or DEFAULT_TENANT,
        "updated_at": float(raw.get("updated_at", 0)),
    }
    if raw.get("app_id"):  # who may read it (recall_api.access)
        out["app_id"] = raw["app_id"]
    if raw.get("kid"):
        out["kid"] = raw["kid"]
    if "counts" in raw:
        out["counts"] = json.loads(raw["counts"])
        out["memory_ids"] = json.loads(raw.get("memory_ids", "[]"))
        out["degraded"] = raw.get("degraded") == "1"
        out["warnings"] = json.loads(raw.get("warnings") or "[]")
    if raw.get("status") == "failed":
        out["code"] = int(raw.get("code") or 0)
        out["reason"] = raw.get("reason", "")
    return out
