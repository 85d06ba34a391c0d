"""Content encryption at rest (AES-256-GCM).

The key comes from ``encryption_key`` (any string; SHA-256 makes it 32 bytes) or, in
local mode when unset, from a key file generated once under the data dir (mode 0600).
Ciphertext is ``v1:`` + base64(nonce ‖ ciphertext ‖ tag); the prefix lets a future key
rotation tell versions apart. Sanitized change-log rows hold no ciphertext at all.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from core.settings import Settings

PREFIX = "v1:"


class DecryptionError(ValueError):
    """Ciphertext was written with another key or was altered."""


class ContentCipher:
    def __init__(self, key: bytes):
        self._aead = AESGCM(hashlib.sha256(key).digest())
        self._sign_key = hashlib.sha256(b"memstream-sign:" + key).digest()

    def sign(self, message: str) -> str:
        """HMAC-SHA256 of ``message`` (e.g. an expiring download link), hex."""
        return hmac.new(self._sign_key, message.encode(), hashlib.sha256).hexdigest()

    def verify(self, message: str, signature: str) -> bool:
        return hmac.compare_digest(self.sign(message), signature)

    @classmethod
    def from_settings(cls, s: Settings) -> ContentCipher:
        secret = s.encryption_key.get_secret_value()
        if secret:
            return cls(secret.encode())
        path = s.data_path / "secrets" / "content.key"
        return cls(_load_or_create_key(path))

    def encrypt(self, text: str) -> str:
        if not text:
            return ""
        nonce = os.urandom(12)
        sealed = self._aead.encrypt(nonce, text.encode("utf-8"), None)
        return PREFIX + base64.b64encode(nonce + sealed).decode("ascii")

    def decrypt(self, blob: str) -> str:
        if not blob:
            return ""
        if not blob.startswith(PREFIX):
            raise DecryptionError("unknown ciphertext version")
        raw = base64.b64decode(blob[len(PREFIX) :])
        try:
            return self._aead.decrypt(raw[:12], raw[12:], None).decode("utf-8")
        except InvalidTag as exc:
            raise DecryptionError("content does not decrypt with this key") from exc


def _load_or_create_key(path: Path) -> bytes:
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
