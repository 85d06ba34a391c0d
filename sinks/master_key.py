"""The master key: wraps and unwraps the per-(tenant, user) data keys, never content.

``MasterKey`` is the whole interface a KMS has to offer (``key_id``, ``wrap``,
``unwrap``); ``LocalMasterKey`` is the built-in one: AES-256-GCM under a key derived
(HKDF-SHA256) from ``encryption_key`` (env ``MEMSTREAM_ENCRYPTION_KEY``) or, in local
mode when that is unset, from the key file generated once at
``<data_dir>/secrets/content.key`` (mode 0600) — the same secret the single-key (``v1:``)
cipher used, so old stores stay readable.

Rotation: set the new secret as ``encryption_key`` and the old one(s) in
``encryption_previous_keys`` (comma-separated). Data keys wrapped by an old master are
re-wrapped by the current one when next loaded, and ``KeyRing.rewrap_all()`` re-wraps
the rest; no content is re-encrypted.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from core.settings import Settings


class UnwrapError(ValueError):
    """A wrapped data key does not open with this master key (another master, or altered)."""


class MasterKey(Protocol):
    """What wraps data keys: the local secret below, or a KMS client."""

    @property
    def key_id(self) -> str: ...

    def wrap(self, data_key: bytes, context: bytes) -> bytes: ...

    def unwrap(self, wrapped: bytes, context: bytes) -> bytes: ...


def _hkdf(secret: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret)


class LocalMasterKey:
    """AES-256-GCM key wrap; ``context`` (tenant, user, key id) is bound as associated data,
    so a wrapped key copied onto another user's row does not open."""

    def __init__(self, secret: bytes):
        self.secret = secret
        self._aead = AESGCM(_hkdf(secret, b"memstream master key wrap v2"))
        self._id = hashlib.sha256(b"memstream-master-id:" + secret).hexdigest()[:16]

    @property
    def key_id(self) -> str:
        return self._id

    def wrap(self, data_key: bytes, context: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, data_key, context)

    def unwrap(self, wrapped: bytes, context: bytes) -> bytes:
        try:
            return self._aead.decrypt(wrapped[:12], wrapped[12:], context)
        except InvalidTag as exc:
            raise UnwrapError("data key does not unwrap with this master key") from exc


def master_secret(s: Settings) -> bytes:
    """The current master secret: ``encryption_key`` or the local key file."""
    secret = s.encryption_key.get_secret_value()
    if secret:
        return secret.encode()
    return load_or_create_key(s.data_path / "secrets" / "content.key")


def masters_from_settings(s: Settings) -> tuple[LocalMasterKey, list[LocalMasterKey]]:
    """The current master key and the previous ones (for unwrap during a rotation)."""
    previous = [
        LocalMasterKey(p.strip().encode())
        for p in s.encryption_previous_keys.get_secret_value().split(",")
        if p.strip()
    ]
    return LocalMasterKey(master_secret(s)), previous


def load_or_create_key(path: Path) -> bytes:
    if path.exists():
        return path.read_bytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = os.urandom(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first
        return path.read_bytes()
    try:
        os.write(fd, key)
    finally:
        os.close(fd)
    return key
