"""Who the caller is and what its key may touch (docs/security.md#api-keys).

Every endpoint checks the key against the exact memories it touches:

* by id (update, delete, batch_delete ids, history): the memory must be one the key may
  read, else 40401 as if it did not exist (no existence oracle across apps); changing
  it also needs write access, else 40101;
* by scope (recall, add, add_structured, batch_delete scope, session/close, switch,
  change_log): a named ``app_id`` must be one of the key's apps, and a GLOBAL write
  needs the ``global`` grant;
* with no scope (user/list, change_log, history chains, tasks, entities, entity): only
  what the key may see is answered;
* entity/update: an entity the key may see (else 40401), a GLOBAL one only with the
  ``global`` grant, and every memory it rewrites one the key may change (else 40101),
  checked by the writer (``dataflows.ingest.entity_commands``).

``app`` keys: their apps' APP/SESSION memories, read of GLOBAL. ``admin`` keys: the
whole of their tenant, nothing of another. Every check above runs inside the caller's
tenant (``Caller.tenant``): each store, cache, task and export is read and written in
that tenant's namespace (``memstream.schemas.tenants``), so user 42 of another tenant is another
person, and a memory id of another tenant is not found (40401). With no key configured
at all (local mode, loopback only) the caller is the local operator of tenant
``default`` and may do everything there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from core.apikeys import KeyRecord
from memstream.schemas.enums import Level
from memstream.schemas.errors import ErrorCode
from memstream.schemas.memory import MemoryRecord
from memstream.schemas.payloads import Access, DeletePayload
from memstream.schemas.tenants import DEFAULT_TENANT, check_tenant
from recall_api.errors import ApiError


@dataclass(frozen=True)
class Caller:
    tenant: str
    role: str | None  # None: local mode without keys (everything)
    apps: frozenset[str] = frozenset()
    global_grant: bool = False
    kid: str = ""

    @classmethod
    def local(cls) -> Caller:
        return cls(DEFAULT_TENANT, None)

    @classmethod
    def of(cls, rec: KeyRecord) -> Caller:
        try:
            tenant = check_tenant(rec.tenant)
        except ValueError:  # a key stored by an older release with a name now refused
            raise ApiError(
                ErrorCode.UNAUTHENTICATED, f"this key's tenant '{rec.tenant[:64]}' is invalid"
            ) from None
        return cls(tenant, rec.role, rec.apps, rec.global_grant, rec.kid)

    @property
    def is_app(self) -> bool:
        return self.role == "app"

    @property
    def app_ids(self) -> frozenset[str] | None:
        """The apps the key is bound to; None = every app."""
        return self.apps if self.is_app else None

    # --- scope checks -------------------------------------------------------------
    def check_app(self, app_id: str | None) -> None:
        if self.is_app and app_id is not None and app_id not in self.apps:
            raise ApiError(ErrorCode.UNAUTHENTICATED, f"this key may not use app_id '{app_id}'")

    def require_admin(self, what: str) -> None:
        if self.is_app:
            raise ApiError(ErrorCode.UNAUTHENTICATED, f"{what} needs an admin key")

    def check_write_scope(self, level: Level | str | None, app_id: str | None) -> None:
        """A write into (level, app_id); ``level`` None = the event default (APP with an
        app_id, else GLOBAL)."""
        self.check_app(app_id)
        if not self.is_app:
            return
        lvl = Level(level) if level is not None else (Level.APP if app_id else Level.GLOBAL)
        if lvl is Level.GLOBAL:
            if not self.global_grant:
                raise ApiError(
                    ErrorCode.UNAUTHENTICATED,
                    "writing GLOBAL memories needs a key with the global grant "
                    "(or name this key's app_id)",
                )
        elif app_id is None:
            raise ApiError(ErrorCode.UNAUTHENTICATED, f"an app key must name its app_id ({lvl})")

    # --- record checks ------------------------------------------------------------
    def can_read(self, rec: MemoryRecord) -> bool:
        if rec.tenant_id != self.tenant:  # never: the stores are read in the caller's tenant
            return False
        if not self.is_app:
            return True
        return rec.level is Level.GLOBAL or (rec.app_id is not None and rec.app_id in self.apps)

    def can_write(self, rec: MemoryRecord) -> bool:
        if rec.tenant_id != self.tenant:
            return False
        if not self.is_app:
            return True
        if rec.level is Level.GLOBAL:
            return self.global_grant
        return rec.app_id is not None and rec.app_id in self.apps

    def visible(self, records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
        return [r for r in records if self.can_read(r)]

    def writable(self, rec: MemoryRecord | None, memory_id: str) -> MemoryRecord:
        """The record this key may change, else 40401 (unseen) / 40101 (read-only)."""
        if rec is None or not self.can_read(rec):
            raise ApiError(ErrorCode.NOT_FOUND, f"memory '{memory_id}' not found")
        if not self.can_write(rec):
            raise ApiError(
                ErrorCode.UNAUTHENTICATED,
                f"this key may read but not change memory '{memory_id}' ({rec.level.value})",
            )
        return rec

    def access_payload(self) -> Access | None:
        """What a delete command carries so the writer narrows its targets to this key's
        (``dataflows.ingest.management._allowed``); None for admin and local callers."""
        if not self.is_app:
            return None
        # by its wire name: ``global`` is a Python keyword
        return Access.model_validate({"apps": sorted(self.apps), "global": self.global_grant})

    def narrow(self, payload: DeletePayload) -> DeletePayload:
        """``payload`` narrowed to what this key may change (its ``access``); unchanged,
        with no ``access`` at all, for admin and local callers."""
        access = self.access_payload()
        return payload if access is None else payload.model_copy(update={"access": access})

    def may_see_task(self, task: Mapping[str, object]) -> bool:
        if task.get("tenant_id", DEFAULT_TENANT) != self.tenant:
            return False
        if not self.is_app:
            return True
        if task.get("kid") and task.get("kid") == self.kid:
            return True
        return bool(task.get("app_id")) and task.get("app_id") in self.apps
