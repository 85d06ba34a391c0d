"""The API key file: hashed key records (``core.apikeys``), shared by the CLI and the API.

``api_keys_file`` (default ``<data_dir>/api_keys.json``, mode 0600) holds
``{"version": 1, "keys": {kid: record}}``; no secret is in it, only digests. The CLI
(``memstream keys create|list|revoke``) rewrites it atomically (temp file + rename);
every API process re-reads it when its mtime changes (checked at most once a second),
so a revoke takes effect on every node that mounts the file (a Kubernetes Secret or a
shared volume) within a second or two, without a restart.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

from core.apikeys import KeyRecord, KeyRing, legacy_ring, new_key, revoked
from core.settings import Settings, SettingsError

VERSION = 1
RECHECK_S = 1.0


def key_file(settings: Settings) -> Path:
    configured = getattr(settings, "api_keys_file", None)
    return Path(configured) if configured else Path(settings.data_dir) / "api_keys.json"


def read_records(path: Path) -> dict[str, KeyRecord]:
    if not path.exists():
        return {}
    raw = json.loads(path.read_text(encoding="utf-8") or "{}")
    if raw.get("version", VERSION) != VERSION:
        raise ValueError(f"{path}: unknown key file version {raw.get('version')!r}")
    return {kid: KeyRecord.from_json(kid, row) for kid, row in (raw.get("keys") or {}).items()}


def write_records(path: Path, records: dict[str, KeyRecord]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"version": VERSION, "keys": {k: r.to_json() for k, r in sorted(records.items())}}
    fd, tmp = tempfile.mkstemp(prefix=".api_keys.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(body, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def create(
    path: Path,
    tenant: str,
    role: str,
    apps: list[str],
    *,
    global_grant: bool,
    now: datetime,
    note: str = "",
) -> tuple[str, KeyRecord]:
    records = read_records(path)
    key, rec = new_key(
        tenant,
        role,  # type: ignore[arg-type]
        apps,
        global_grant=global_grant,
        now=now,
        note=note,
        taken=records,
    )
    records[rec.kid] = rec
    write_records(path, records)
    return key, rec


def revoke(path: Path, kid: str, now: datetime) -> KeyRecord | None:
    records = read_records(path)
    rec = records.get(kid)
    if rec is None:
        return None
    records[kid] = revoked(rec, now)
    write_records(path, records)
    return records[kid]


class KeyFile:
    """The node's view of the key file plus the ``api_keys`` setting, reloaded on change."""

    def __init__(self, settings: Settings):
        self.path = key_file(settings)
        self._legacy = legacy_ring(settings.api_keys)
        self._lock = threading.Lock()
        self._mtime: float | None = None
        self._checked = 0.0
        self._ring = KeyRing({}, self._legacy)
        self.refresh(force=True)

    def refresh(self, force: bool = False) -> KeyRing:
        now = time.monotonic()
        if not force and now - self._checked < RECHECK_S:
            return self._ring
        with self._lock:
            self._checked = now
            try:
                mtime = self.path.stat().st_mtime
            except FileNotFoundError:
                mtime = None
            if force or mtime != self._mtime:
                records = read_records(self.path) if mtime is not None else {}
                self._ring = KeyRing(records, self._legacy)
                self._mtime = mtime
        return self._ring

    @property
    def ring(self) -> KeyRing:
        return self.refresh()


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def check_bind(settings: Settings) -> None:
    """Refuse to serve beyond loopback with no API key configured, and to run outside local
    mode without one (docs/security.md#api-keys)."""
    ring = KeyFile(settings).ring
    host = settings.api_host.strip("[]")
    if ring.empty and not (host in LOOPBACK_HOSTS or host.startswith("127.")):
        raise SettingsError(
            f"api_host {settings.api_host!r}: with no API key configured the API listens on "
            "loopback only; create one with `memstream keys create` or set "
            "MEMSTREAM_API_HOST=127.0.0.1"
        )
    if ring.empty and not settings.local_mode:
        raise SettingsError("local_mode is false: create an API key (`memstream keys create`)")
