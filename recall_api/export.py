"""Asynchronous export of everything memstream holds about a user, as JSONL.

The file holds one ``{"type": "memory", ...}`` line per memory (as user/list shows it,
deleted ones included) and one ``{"type": "change", ...}`` line per change-log row (as
change_log shows it). It is served through a signed link that expires.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from recall_api.services import Services

TTL_S = 24 * 3600


def _key(export_id: str) -> str:
    return f"export:{export_id}"


def start_export(svc: Services, user_id: int) -> str:
    export_id = f"x_{uuid.uuid4().hex}"
    svc.stores.redis.client.hset(
        _key(export_id),
        mapping={"status": "running", "user_id": user_id, "created_at": time.time()},
    )
    svc.stores.redis.client.expire(_key(export_id), TTL_S)
    threading.Thread(
        target=_run, args=(svc, export_id, user_id), daemon=True, name=f"export-{export_id}"
    ).start()
    return export_id


def export_dir(svc: Services) -> Path:
    return svc.settings.data_path / "exports"


def export_path(svc: Services, export_id: str) -> Path:
    return export_dir(svc) / f"{export_id}.jsonl"


def _run(svc: Services, export_id: str, user_id: int) -> None:
    redis = svc.stores.redis.client
    try:
        path = export_path(svc, export_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        memories = sorted(svc.memories.load(user_id), key=lambda r: (r.created_at, r.memory_id))
        changes, _ = svc.changelog.query(user_id, limit=1_000_000)
        tmp = path.with_suffix(".part")
        with tmp.open("w", encoding="utf-8") as f:
            for m in memories:
                f.write(json.dumps({"type": "memory", **m.public()}, ensure_ascii=False) + "\n")
            for c in changes:
                f.write(json.dumps({"type": "change", **c.public()}, ensure_ascii=False) + "\n")
        tmp.replace(path)
        redis.hset(
            _key(export_id),
            mapping={
                "status": "done",
                "memories": len(memories),
                "changes": len(changes),
                "finished_at": time.time(),
            },
        )
    except Exception as exc:  # the job reports its failure instead of vanishing
        redis.hset(_key(export_id), mapping={"status": "failed", "reason": str(exc)[:500]})


def status(svc: Services, export_id: str) -> dict[str, Any] | None:
    raw = svc.stores.redis.client.hgetall(_key(export_id))
    return dict(raw) if raw else None


def signed_link(svc: Services, export_id: str, ttl_s: int) -> tuple[str, int]:
    expires = int(time.time()) + ttl_s
    sig = svc.memories.cipher.sign(f"{export_id}:{expires}")
    return f"/memory/v1/export/download/{export_id}?expires={expires}&sig={sig}", expires


def link_valid(svc: Services, export_id: str, expires: int, sig: str) -> bool:
    if not sig.isascii():  # a signature is hex; compare_digest refuses other str
        return False
    return expires >= time.time() and svc.memories.cipher.verify(f"{export_id}:{expires}", sig)
