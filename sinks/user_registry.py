"""The external-id registry in ClickHouse (``user_registry``; docs/architecture.md#external-user-ids).

A row is (tenant, token, user id): the token is a keyed hash of the external id
(``core.external_ids``) under the registry key, so the table never holds the external id
and a token cannot be recomputed without the server's key. A purge erases the user's
rows with a synchronous mutation (as ``data_keys``), so nothing of the external id stays.

The registry key is a data key of its own in ``data_keys`` (``KeyRing.fixed``): wrapped by
the master key and re-wrapped on rotation, so a rotation never changes a token. Its first
material is derived from the master secret, so two processes that create it at once
store the same key and agree on every token from the start.

Who writes: only the keyed writer's ``resolve_user`` (dataflows/ingest/registry.py),
which reads then inserts inside the one writer of the token's route. The API reads
(``find``) and erases (``forget_user``).
"""

from __future__ import annotations

import hashlib
import os
import time
from datetime import datetime

from core import external_ids
from memstream.schemas.storage import REGISTRY_TABLE
from sinks.clickhouse import ClickHouseStore
from sinks.crypto import DataKey, DecryptionError
from sinks.keyring import KeyRing

COLUMNS = ("tenant_id", "lookup", "user_id", "created_at", "version")
_MATERIAL = "memstream external id registry v1"
_TRIES = 8  # a taken random 63-bit id is one in billions; eight in a row is a broken store


class UserRegistry:
    def __init__(self, clickhouse: ClickHouseStore, keys: KeyRing):
        self.ch = clickhouse
        self.keys = keys

    @property
    def _table(self) -> str:
        return f"{self.ch.database}.{REGISTRY_TABLE}"

    def token(self, tenant: str, external_id: str) -> str:
        """The lookup token of ``external_id`` in ``tenant``."""
        return self._key().blind(external_ids.lookup_text(tenant, external_id))

    def find(self, tenant: str, token: str) -> int | None:
        """The user id ``token`` maps to in ``tenant``, or None."""
        rows = self.ch.query(
            f"SELECT user_id FROM {self._table} FINAL "
            "WHERE tenant_id = {t:String} AND lookup = {l:String} "
            "ORDER BY created_at, user_id LIMIT 1",
            {"t": tenant, "l": token},
        )
        return int(rows[0][0]) if rows else None

    def create(self, tenant: str, token: str, now: datetime) -> int:
        """Map ``token`` to a new user id and store it; the caller (the one writer of the
        token's route) has just found none. A random id in use by anyone of the tenant
        (registered, or holding a data key: a user named by id) is drawn again."""
        for _ in range(_TRIES):
            user_id = external_ids.candidate()
            if not self._taken(tenant, user_id):
                row = [tenant, token, user_id, now, time.time_ns()]
                self.ch.insert(REGISTRY_TABLE, [row], COLUMNS)
                return user_id
        raise RuntimeError("no free user id after several random draws")

    def tokens_of(self, tenant: str, user_id: int) -> list[str]:
        """The tokens that map to ``user_id`` (what a purge evicts from the API's cache)."""
        rows = self.ch.query(
            f"SELECT lookup FROM {self._table} FINAL "
            "WHERE tenant_id = {t:String} AND user_id = {u:UInt64}",
            {"t": tenant, "u": user_id},
        )
        return [str(r[0]) for r in rows]

    def forget_user(self, tenant: str, user_id: int) -> list[str]:
        """Erase the user's rows (a purge); returns their tokens. A mutation rewrites the
        parts, so the rows leave the disk too (a lightweight DELETE would only mask them)."""
        tokens = self.tokens_of(tenant, user_id)
        if tokens:
            target = self.ch.layout.mutate(REGISTRY_TABLE)
            self.ch.command(
                f"ALTER TABLE {target} DELETE WHERE tenant_id = {{t:String}} "
                "AND user_id = {u:UInt64} SETTINGS mutations_sync = 2",
                {"t": tenant, "u": user_id},
            )
        return tokens

    def _taken(self, tenant: str, user_id: int) -> bool:
        params = {"t": tenant, "u": user_id}
        where = "WHERE tenant_id = {t:String} AND user_id = {u:UInt64}"
        rows = self.ch.query(
            f"SELECT (SELECT count() FROM {self._table} {where}) + "
            f"(SELECT count() FROM {self.ch.database}.data_keys {where})",
            params,
        )
        return int(rows[0][0]) > 0

    def _key(self) -> DataKey:
        try:  # the same first material in every process of this master secret
            seed = self.keys.sign(_MATERIAL).encode()
        except DecryptionError:  # no local master secret: a random first key
            seed = os.urandom(32)
        material = hashlib.sha256(_MATERIAL.encode() + b"|" + seed).digest()
        return self.keys.fixed(
            external_ids.KEY_USER, external_ids.KEY_TENANT, external_ids.KEY_ID, material
        )
