"""Asynchronous export of everything memstream holds about a user, as JSONL.

The file holds one ``{"type": "memory", ...}`` line per memory (as user/list shows it,
deleted ones included) and one ``{"type": "change", ...}`` line per change-log row (as
change_log shows it), each with its ``tenant_id``. It is served through a signed link that
expires. An export belongs to its tenant (``tenant_id`` in its Redis record): another
tenant's key does not see its status; the random export id and the signed link name it.

At rest the file is sealed line by line with the user's data key
(``<data_dir>/exports/<tenant>/<user_id>/<export_id>.jsonl.sealed``, one ``v2:`` blob a
line); the download opens it on the fly. It lives ``TTL_S`` from its creation: no link
outlives that, the download refuses it after that, and the sweeper (every
``SWEEP_EVERY_S``, from the API's start) deletes it then. A purge deletes the user's files, and
destroying the data key has made any copy of them (a backup) unreadable before that.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import cast

from memstream.schemas.enums import MemType
from memstream.schemas.json_types import JsonObject
from memstream.schemas.responses import Change, Memory
from memstream.schemas.tenants import DEFAULT_TENANT
from sinks.services import Services

log = logging.getLogger(__name__)
TTL_S = 24 * 3600
SWEEP_EVERY_S = 60.0
_sweepers: set[int] = set()
SUFFIX = ".jsonl.sealed"


def _key(export_id: str) -> str:
    return f"export:{export_id}"


def start_export(svc: Services, user_id: int, tenant: str) -> str:
    sweep(svc)
    export_id = f"x_{uuid.uuid4().hex}"
    svc.stores.redis.client.hset(
        _key(export_id),
        mapping={
            "status": "running",
            "tenant_id": tenant,
            "user_id": user_id,
            "created_at": time.time(),
        },
    )
    svc.stores.redis.client.expire(_key(export_id), TTL_S)
    threading.Thread(
        target=_run,
        args=(svc, export_id, user_id, tenant),
        daemon=True,
        name=f"export-{export_id}",
    ).start()
    return export_id


def export_dir(svc: Services) -> Path:
    return svc.settings.data_path / "exports"


def user_dir(svc: Services, user_id: int, tenant: str) -> Path:
    return export_dir(svc) / tenant / str(user_id)


def export_path(svc: Services, export_id: str, user_id: int, tenant: str) -> Path:
    return user_dir(svc, user_id, tenant) / f"{export_id}{SUFFIX}"


def _run(svc: Services, export_id: str, user_id: int, tenant: str) -> None:
    redis = svc.stores.redis.client
    keys = svc.memories.cipher
    try:
        path = export_path(svc, export_id, user_id, tenant)
        path.parent.mkdir(parents=True, exist_ok=True)
        memories = sorted(
            svc.memories.load(user_id, tenant=tenant, mem_types=list(MemType)),
            key=lambda r: (r.created_at, r.memory_id),
        )
        changes, _ = svc.changelog.query(user_id, tenant=tenant, limit=1_000_000)
        lines = [_line("memory", tenant, Memory.of(m)) for m in memories]
        lines += [_line("change", tenant, Change.of(c)) for c in changes]
        tmp = path.with_suffix(".part")
        with tmp.open("w", encoding="ascii") as f:
            for line in lines:
                text = json.dumps(line, ensure_ascii=False, default=str)
                f.write(keys.encrypt(user_id, text, tenant) + "\n")
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


def _line(kind: str, tenant: str, row: Memory | Change) -> JsonObject:
    """One line of the file: the memory or change as the API shows it, with its type and tenant."""
    return {"type": kind, "tenant_id": tenant, **row.model_dump(mode="json")}


def status(svc: Services, export_id: str, tenant: str | None) -> dict[str, str] | None:
    """The export's record; None when unknown or another tenant's (``tenant`` None: the
    signed download, whose link names the export)."""
    # decode_responses=True (sinks.redis_store): str fields and values
    raw = cast("dict[str, str]", svc.stores.redis.client.hgetall(_key(export_id)))
    if not raw:
        return None
    found = dict(raw)
    found.setdefault("tenant_id", DEFAULT_TENANT)  # made before tenants
    if tenant is not None and found["tenant_id"] != tenant:
        return None
    return found


def file_of(svc: Services, export_id: str) -> tuple[Path, int, str] | None:
    """The sealed file of an export, its user and tenant, while it exists and has not
    expired."""
    found = status(svc, export_id, None)
    if not found or "user_id" not in found:
        return None
    user_id, tenant = int(found["user_id"]), found["tenant_id"]
    path = export_path(svc, export_id, user_id, tenant)
    if not path.exists() or expires_at(path) < time.time():
        return None
    return path, user_id, tenant


def expires_at(path: Path) -> float:
    return path.stat().st_mtime + TTL_S


def read_lines(svc: Services, path: Path, user_id: int, tenant: str) -> Iterator[bytes]:
    """The plaintext JSONL of a sealed export file (a destroyed key ends it empty)."""
    keys = svc.memories.cipher
    with path.open(encoding="ascii") as f:
        for blob in f:
            text = keys.open(user_id, blob.strip(), tenant)
            if text:
                yield (text + "\n").encode("utf-8")


def sweep(svc: Services, now: float | None = None) -> int:
    """Delete every export file past its expiry; returns how many."""
    now = time.time() if now is None else now
    removed = 0
    for path in export_dir(svc).glob(f"*/*/*{SUFFIX}"):
        try:
            if expires_at(path) < now:
                path.unlink(missing_ok=True)
                removed += 1
        except FileNotFoundError:
            continue
    return removed


def start_sweeper(svc: Services) -> None:
    """Sweep now and then every SWEEP_EVERY_S in a daemon thread (once per data dir)."""
    key = hash(str(export_dir(svc)))
    if key in _sweepers:
        return
    _sweepers.add(key)

    def loop() -> None:
        while True:
            try:
                sweep(svc)
            except OSError:
                log.warning("export sweep failed", exc_info=True)
            time.sleep(SWEEP_EVERY_S)

    threading.Thread(target=loop, daemon=True, name="export-sweeper").start()


def delete_user_exports(svc: Services, user_id: int, tenant: str) -> int:
    """A purge: every export file of the user goes (finished or being written)."""
    folder = user_dir(svc, user_id, tenant)
    n = len(list(folder.glob("*"))) if folder.exists() else 0
    shutil.rmtree(folder, ignore_errors=True)
    return n


def signed_link(svc: Services, export_id: str, ttl_s: int) -> tuple[str, int]:
    expires = int(time.time()) + ttl_s
    found = file_of(svc, export_id)
    if found is not None:  # no link outlives the file
        expires = min(expires, int(expires_at(found[0])))
    sig = svc.memories.cipher.sign(f"{export_id}:{expires}")
    return f"/memory/v1/export/download/{export_id}?expires={expires}&sig={sig}", expires


def link_valid(svc: Services, export_id: str, expires: int, sig: str) -> bool:
    """Unexpired and signed by us (itsdangerous: a signature that is junk, say not
    base64 or not ASCII, is just invalid)."""
    return expires >= time.time() and svc.memories.cipher.verify(f"{export_id}:{expires}", sig)
