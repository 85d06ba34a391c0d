"""Ciphertext formats (AES-256-GCM) and the per-user data key's derived keys.

Two versions are read, one is written:

* ``v2:<key_id>:`` + base64(nonce ‖ ciphertext ‖ tag) — written now. Sealed with the
  data key ``key_id`` of one (tenant, user) (``sinks.keyring``); the tenant, user and key
  id are bound as associated data, so a blob moved to another user's row does not open.
  Destroying that data key (purge) makes every such blob unreadable wherever it lies.
* ``v1:`` + base64(nonce ‖ ciphertext ‖ tag) — the single-key format of stores written
  before crypto-shredding, under SHA-256 of the master secret (``LegacyCipher``). Kept
  readable, not migrated: a memory is re-written as ``v2`` when it next gets a new
  version (any update, decay, delete); until then its ``v1`` content is not covered by
  the shredding of a purge, only by the physical purge.

Sanitized change-log rows hold no ciphertext at all.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from itsdangerous import Signer

V1 = "v1:"
V2 = "v2:"


class DecryptionError(ValueError):
    """Ciphertext was written with another key, was altered, or has an unknown version."""


class KeyDestroyed(DecryptionError):
    """The data key of the blob is gone: its user was purged (crypto-shredded)."""


def is_ciphertext(text: str) -> bool:
    return text.startswith((V1, V2))


def key_id_of(blob: str) -> str | None:
    """The data key id of a ``v2`` blob (None for ``v1`` or plaintext)."""
    if not blob.startswith(V2):
        return None
    return blob[len(V2) :].split(":", 1)[0]


def _derive(key: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(key)


@dataclass(frozen=True)
class DataKey:
    """One unwrapped data key of a (tenant, user): content AEAD and the blind-index key."""

    tenant: str
    user_id: int
    key_id: str
    aead: AESGCM
    blind_key: bytes

    @classmethod
    def of(cls, tenant: str, user_id: int, key_id: str, material: bytes) -> DataKey:
        return cls(
            tenant,
            user_id,
            key_id,
            AESGCM(_derive(material, b"memstream content v2")),
            _derive(material, b"memstream blind index v2"),
        )

    @functools.cached_property
    def aad(self) -> bytes:  # computed once: a snapshot load opens ~400 values with it
        return f"{self.tenant}|{self.user_id}|{self.key_id}".encode()

    def encrypt(self, text: str) -> str:
        nonce = os.urandom(12)
        sealed = self.aead.encrypt(nonce, text.encode("utf-8"), self.aad)
        return f"{V2}{self.key_id}:" + base64.b64encode(nonce + sealed).decode("ascii")

    def encrypt_bytes(self, data: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + self.aead.encrypt(nonce, data, self.aad)

    def decrypt(self, blob: str) -> str:
        raw = base64.b64decode(blob[len(V2) :].split(":", 1)[1])
        return self._open(raw).decode("utf-8")

    def decrypt_bytes(self, raw: bytes) -> bytes:
        return self._open(raw)

    def _open(self, raw: bytes) -> bytes:
        try:
            return self.aead.decrypt(raw[:12], raw[12:], self.aad)
        except InvalidTag as exc:
            raise DecryptionError("content does not decrypt with this key") from exc

    def blind(self, text: str) -> str:
        """A keyed token for equality search (HMAC-SHA256, 128 bits, hex)."""
        return hmac.new(self.blind_key, text.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


class LegacyCipher:
    """The single-key ``v1`` cipher (reads old stores) and the link signer."""

    def __init__(self, key: bytes):
        self._aead = AESGCM(hashlib.sha256(key).digest())
        sign_key = hashlib.sha256(b"memstream-sign:" + key).digest()
        self._signer = Signer(sign_key, salt="memstream-link", digest_method=hashlib.sha256)

    def sign(self, message: str) -> str:
        """The signature of ``message`` (e.g. an expiring download link): itsdangerous,
        HMAC-SHA256, URL-safe base64."""
        return self._signer.get_signature(message).decode("ascii")

    def verify(self, message: str, signature: str) -> bool:
        """Whether ``signature`` is ``message``'s (constant-time; junk is just false)."""
        return self._signer.verify_signature(message, signature)

    def encrypt(self, text: str) -> str:
        """Only for tests that build an old (``v1``) store."""
        nonce = os.urandom(12)
        sealed = self._aead.encrypt(nonce, text.encode("utf-8"), None)
        return V1 + base64.b64encode(nonce + sealed).decode("ascii")

    def decrypt(self, blob: str) -> str:
        raw = base64.b64decode(blob[len(V1) :])
        try:
            return self._aead.decrypt(raw[:12], raw[12:], None).decode("utf-8")
        except InvalidTag as exc:
            raise DecryptionError("content does not decrypt with this key") from exc
