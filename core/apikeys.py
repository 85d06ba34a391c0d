"""API keys: what a key is, how it is stored (hashed) and checked (constant time).

The gateway authenticates and names the caller (docs/security.md#api-keys): a key
belongs to one tenant with a role:

* ``app`` — its ``apps``' APP and SESSION memories, and read of the users' GLOBAL
  memories; writing GLOBAL needs the ``global`` grant;
* ``admin`` — the whole tenant: purge, export, the global switch, ``/admin``.

A key reads ``msk_<kid>_<secret>``: ``kid`` (8 hex) finds its record, the secret is 32
random bytes (``secrets.token_urlsafe``). Only ``sha256(key)`` is kept: a key has 256
bits of entropy, so a fast hash is enough (a slow KDF protects guessable passwords,
which these are not), and the comparison is :func:`hmac.compare_digest`. The plaintext
is printed once by ``memstream keys create`` and never stored. Pure, no I/O (the file
lives in ``sinks.keystore``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from memstream.schemas.tenants import DEFAULT_TENANT, check_tenant

Role = Literal["app", "admin"]
ROLES: tuple[Role, ...] = ("app", "admin")
PREFIX = "msk_"
_KEY = re.compile(r"^msk_(?P<kid>[0-9a-f]{8})_[A-Za-z0-9_-]{20,100}$")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")


def digest(key: str) -> str:
    """``sha256:<hex>`` of a key, the only form a key is stored in."""
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def kid_of(key: str) -> str | None:
    """The record id of a well-formed key, else None."""
    m = _KEY.match(key)
    return m.group("kid") if m else None


def check_name(what: str, value: str) -> str:
    """A tenant or app name: 1–128 of ``[A-Za-z0-9_.:-]``, not starting with punctuation."""
    if not _NAME.fullmatch(value):
        raise ValueError(f"{what} '{value}' must be 1-128 of A-Z a-z 0-9 _ . : - (no spaces)")
    return value


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """One stored key, without its secret."""

    kid: str
    digest: str
    tenant: str
    role: Role
    apps: frozenset[str] = frozenset()
    global_grant: bool = False  # app keys: may write GLOBAL memories
    created_at: datetime | None = None
    revoked_at: datetime | None = None
    note: str = ""

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def public(self) -> dict[str, object]:
        """What ``keys list`` shows: everything but the digest."""
        return {
            "kid": self.kid,
            "tenant": self.tenant,
            "role": self.role,
            "apps": sorted(self.apps),
            "global": self.global_grant,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
            "note": self.note,
        }

    def to_json(self) -> dict[str, object]:
        return {**self.public(), "digest": self.digest}

    @classmethod
    def from_json(cls, kid: str, row: Mapping[str, Any]) -> KeyRecord:
        role = str(row.get("role", "app"))
        if role not in ROLES:
            raise ValueError(f"key {kid}: role must be one of {ROLES}, got {role!r}")
        when = {
            k: datetime.fromisoformat(row[k]) if row.get(k) else None
            for k in ("created_at", "revoked_at")
        }
        return cls(
            kid=kid,
            digest=str(row["digest"]),
            tenant=str(row.get("tenant") or DEFAULT_TENANT),
            role=role,
            apps=frozenset(str(a) for a in row.get("apps") or ()),
            global_grant=bool(row.get("global", False)),
            note=str(row.get("note", "")),
            **when,
        )


def new_key(
    tenant: str,
    role: Role,
    apps: Iterable[str] = (),
    *,
    global_grant: bool = False,
    now: datetime,
    note: str = "",
    taken: Iterable[str] = (),
) -> tuple[str, KeyRecord]:
    """A fresh key and its record. An app key names at least one app; an admin key none."""
    check_tenant(tenant)
    apps = frozenset(check_name("app", a) for a in apps)
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}")
    if role == "app" and not apps:
        raise ValueError("an app key needs --apps (the apps it may use)")
    if role == "admin" and (apps or global_grant):
        raise ValueError("an admin key covers the whole tenant: no --apps or --global")
    used = set(taken)
    kid = secrets.token_hex(4)
    while kid in used:
        kid = secrets.token_hex(4)
    key = f"{PREFIX}{kid}_{secrets.token_urlsafe(32)}"
    rec = KeyRecord(kid, digest(key), tenant, role, apps, global_grant, now, None, note)
    return key, rec


def revoked(rec: KeyRecord, now: datetime) -> KeyRecord:
    return rec if rec.revoked_at is not None else replace(rec, revoked_at=now)


@dataclass(frozen=True)
class KeyRing:
    """The keys a node accepts: stored records (by kid) and legacy settings digests."""

    records: Mapping[str, KeyRecord] = field(default_factory=dict)
    legacy: Mapping[str, KeyRecord] = field(default_factory=dict)  # digest -> record

    @property
    def empty(self) -> bool:
        return not self.records and not self.legacy

    def verify(self, key: str) -> KeyRecord | None:
        """The active record the key opens, else None; the digest compare is constant time."""
        d = digest(key)
        kid = kid_of(key)
        rec = self.records.get(kid) if kid is not None else None
        if rec is not None and hmac.compare_digest(rec.digest, d):
            return rec if rec.active else None
        found = None
        for known, legacy in self.legacy.items():  # few entries; compare them all
            if hmac.compare_digest(known, d):
                found = legacy
        return found


def legacy_ring(api_keys: Mapping[str, Mapping[str, Any]]) -> dict[str, KeyRecord]:
    """Keys given in the ``api_keys`` setting: ``{"<key or sha256:hex>": {tenant, role?,
    app_ids?, global?}}``. A plaintext key is hashed here and never kept; an entry without
    ``app_ids`` (the old form meaning "every app") becomes an admin key of its tenant."""
    out: dict[str, KeyRecord] = {}
    for i, (key, binding) in enumerate(api_keys.items()):
        d = key if key.startswith("sha256:") else digest(key)
        apps = binding.get("app_ids")
        role = str(binding.get("role") or ("app" if apps is not None else "admin"))
        if role not in ROLES:
            raise ValueError(f"api_keys entry {i}: role must be one of {ROLES}")
        out[d] = KeyRecord(
            kid=f"setting{i}",
            digest=d,
            tenant=str(binding.get("tenant") or DEFAULT_TENANT),
            role=role,
            apps=frozenset(str(a) for a in apps or ()),
            global_grant=bool(binding.get("global", False)),
        )
    return out
