"""What a scoped delete names: one rule for the memories it deletes and the turns it fences.

A ``delete`` command (``purge`` with a scope, ``batch_delete`` with a scope) names the
user's memories by ``scope`` (``app_id`` / ``level`` / ``session_id``, each as given)
narrowed to what the caller's key may change (``access``: ``{"apps": [...], "global":
bool}`` of an app key, absent for an admin key). The keyed writer selects memories with
it (``dataflows.ingest.management``) and refuses, with the same rule, the turns sent
before the delete that reach it later (``dataflows.ingest.fence``): a turn of the scope
would otherwise become a memory of the scope after the caller was told it was emptied
(docs/architecture.md#purge-fences).

Pure: no I/O, plain values in, a bool out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypedDict

from memstream.schemas.enums import Level
from memstream.schemas.payloads import DeletePayload, DeleteScopeSpec

# An app key's reach: its apps, and whether it may change GLOBAL memories.
Grant = TypedDict("Grant", {"apps": Iterable[str], "global": bool})


def allowed(level: str, app_id: str | None, access: Grant | None) -> bool:
    """May a caller with ``access`` change a memory of this ``level`` and ``app_id``?
    ``None``: an admin key, everything; an app key: its apps, and GLOBAL with the grant."""
    if access is None:
        return True
    if level == Level.GLOBAL:
        return bool(access.get("global"))
    return app_id is not None and app_id in set(access.get("apps") or ())


@dataclass(frozen=True, slots=True)
class DeleteScope:
    """A delete's scope and access, hashable (a fence's key in the writer's state).

    ``app_given``: the scope names ``app_id`` (``app_id`` None then means "no app");
    ``level`` / ``session_id`` None: any. ``apps`` None: no access limit (admin key)."""

    app_given: bool = False
    app_id: str | None = None
    level: str | None = None
    session_id: str | None = None
    apps: tuple[str, ...] | None = None
    global_grant: bool = False

    @classmethod
    def of(cls, payload: DeletePayload | Mapping[str, object]) -> DeleteScope:
        """The scope of a ``delete`` command's payload (its ``scope`` and ``access``);
        a mapping is validated as one (``memstream.schemas.payloads.DeletePayload``)."""
        p = payload if isinstance(payload, DeletePayload) else DeletePayload.model_validate(payload)
        scope = p.scope or DeleteScopeSpec()
        access = p.access
        return cls(
            app_given="app_id" in scope.model_fields_set,
            app_id=scope.app_id or None,
            level=str(scope.level) if scope.level else None,
            session_id=scope.session_id or None,
            apps=None if access is None else tuple(sorted(set(access.apps))),
            global_grant=bool(access and access.global_grant),
        )

    def matches(self, app_id: str | None, level: str, session_id: str | None) -> bool:
        """Does the delete name a memory (or a turn's memories) of this scope?"""
        if self.app_given and (app_id or None) != self.app_id:
            return False
        if self.level is not None and level != self.level:
            return False
        if self.session_id is not None and session_id != self.session_id:
            return False
        if self.apps is None:
            return True
        return allowed(level, app_id, {"apps": self.apps, "global": self.global_grant})
