"""External user ids: the pure rules of the registry (docs/architecture.md#external-user-ids).

A caller names a user by its own string (an email, a UUID, LangMem's ``"{user_id}"``);
memstream's ids are uint64. The registry maps one to the other per tenant, created on
first use. The mapping is never a hash of the string: a hash of a guessable id is
guessable (anyone could compute alice's user id) and 64 bits collide at scale. A new
user gets a random id (:func:`candidate`), checked against the ids in use.

The registry finds a row by a *token*: a keyed hash (HMAC, the server's registry key)
of :func:`lookup_text`, so neither the stores nor the commands topic hold the external
id. :func:`route_of` turns the token into the writer key the resolve command is sent
under, so every resolve of one external id runs in one keyed writer, one after another.
No I/O here (sinks/user_registry.py reads and writes).
"""

from __future__ import annotations

import re
import secrets

TOKEN = re.compile(r"[0-9a-f]{32}")  # what DataKey.blind gives: 128 bits, hex
_ROUTE_HEX = 15  # 60 bits: any uint64 would do; a short key reads better in logs
_ID_BITS = 63  # below 2**63: a signed 64-bit integer (JavaScript's BigInt, SQL) holds it
KEY_ID = "registry-v1"  # the registry key's id in data_keys
# The registry key is no user's: a tenant name the tenant rule refuses (memstream.schemas.
# tenants: no "/"), so no purge, tenant or SQL ever reaches it.
KEY_TENANT = "memstream/registry"
KEY_USER = 0


def lookup_text(tenant: str, external_id: str) -> str:
    """What the token is computed from: the tenant, then the id. A tenant holds no
    control character and an external id none either (memstream.schemas.requests), so the
    separator keeps ("a", "b c") and ("a b", "c") apart."""
    return f"{tenant}\x1f{external_id}"


def route_of(token: str) -> int:
    """The writer key (a command's ``user_id``) that serialises the resolves of ``token``."""
    if not TOKEN.fullmatch(token):
        raise ValueError("a registry token is 32 lowercase hex digits")
    return int(token[:_ROUTE_HEX], 16)


def candidate() -> int:
    """A new user id: random in [1, 2**63); the caller retries while it is taken."""
    while True:
        found = secrets.randbits(_ID_BITS)
        if found:
            return found
