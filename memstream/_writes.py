"""The write endpoints of ``/memory/v1``, once for both clients (``memstream.client``):
each describes its call; the client's ``_run`` sends it. Every write but ``switch`` (a
value set twice is harmless) and ``export`` carries a ``request_id`` drawn before the
first attempt (``Runner._write``), so a retried write is applied once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal

from memstream._transport import V1, Call, Runner, body_of, new_request_id, to_json
from memstream.schemas.enums import Level, MemType, Ownership
from memstream.schemas.events import Message, Strategy
from memstream.schemas.responses import (
    AddAccepted,
    Deleted,
    EntityUpdated,
    ExportStarted,
    ItemPut,
    Purged,
    SessionClosed,
    StructuredAdded,
    Switched,
    Updated,
)


class Writes(Runner):
    def add(
        self,
        user_id: int,
        messages: Sequence[Message | Mapping[str, object]],
        *,
        app_id: str | None = None,
        session_id: str | None = None,
        level: Level | str | None = None,
        ownership: Ownership | str | None = None,
        strategy: Strategy | Mapping[str, object] | None = None,
        request_id: str | None = None,
    ) -> AddAccepted:
        """Hand over conversation turns for extraction; answers at once with a task id
        (``wait_task`` waits for it). ``messages``: ``{role, content, name?, msg_id?, ts?}``."""
        return self._write(
            "add",
            AddAccepted,
            request_id,
            user_id=user_id,
            app_id=app_id,
            session_id=session_id,
            level=level,
            ownership=ownership,
            messages=list(messages),
            strategy=strategy,
        )

    def add_structured(
        self,
        user_id: int,
        content: str,
        *,
        app_id: str | None = None,
        session_id: str | None = None,
        level: Level | str | None = None,
        ownership: Ownership | str | None = None,
        mem_type: MemType | str | None = None,
        is_important: bool | None = None,
        expire_at: datetime | None = None,
        custom_tags: Mapping[str, object] | None = None,
        request_id: str | None = None,
    ) -> StructuredAdded:
        """Write one memory as given (no extraction, no evolution); answers once durable."""
        return self._write(
            "add_structured",
            StructuredAdded,
            request_id,
            user_id=user_id,
            content=content,
            app_id=app_id,
            session_id=session_id,
            level=level,
            ownership=ownership,
            mem_type=mem_type,
            is_important=is_important,
            expire_at=expire_at,
            custom_tags=custom_tags,
        )

    def update(
        self,
        user_id: int,
        memory_id: str,
        *,
        content: str | None = None,
        is_important: bool | None = None,
        expire_at: datetime | None = None,
        clear_expire_at: bool | None = None,
        custom_tags: Mapping[str, object] | None = None,
        request_id: str | None = None,
    ) -> Updated:
        """Change content (re-embedded) and/or meta; give at least one of them."""
        return self._write(
            "update",
            Updated,
            request_id,
            user_id=user_id,
            memory_id=memory_id,
            content=content,
            is_important=is_important,
            expire_at=expire_at,
            clear_expire_at=clear_expire_at,
            custom_tags=custom_tags,
        )

    def update_entity(
        self,
        user_id: int,
        entity_id: str,
        op: Literal["rename", "merge", "split"],
        *,
        name: str | None = None,
        type: str | None = None,
        into: str | None = None,
        memory_ids: Sequence[str] | None = None,
        request_id: str | None = None,
    ) -> EntityUpdated:
        """Correct how the user's mentions were resolved: ``rename`` (``name`` and/or
        ``type``; the old name stays an alias), ``merge`` (``entity_id``'s links become
        ``into``'s) or ``split`` (``memory_ids`` leave ``entity_id`` for a new entity,
        named ``name`` or the old name). Answers the entity that holds the links now and
        the memories that got a new version; an unknown entity: ``NotFound``."""
        return self._write(
            "entity/update",
            EntityUpdated,
            request_id,
            user_id=user_id,
            op=op,
            entity_id=entity_id,
            name=name,
            type=type,
            into=into,
            memory_ids=list(memory_ids) if memory_ids is not None else None,
        )

    def delete(self, user_id: int, memory_id: str, *, request_id: str | None = None) -> Deleted:
        """Soft delete: out of recall when this returns, purged after the retention."""
        return self._write("delete", Deleted, request_id, user_id=user_id, memory_id=memory_id)

    def batch_delete(
        self,
        user_id: int,
        *,
        memory_ids: Sequence[str] | None = None,
        scope: Mapping[str, object] | None = None,
        request_id: str | None = None,
    ) -> Deleted:
        """Delete the named ids, or everything of a ``scope`` (``{app_id?, level?,
        session_id?}``; ``{}`` is all the key may change); exactly one of the two."""
        return self._write(
            "batch_delete",
            Deleted,
            request_id,
            user_id=user_id,
            memory_ids=list(memory_ids) if memory_ids is not None else None,
            scope=dict(scope) if scope is not None else None,
        )

    def resolve_user(self, external_id: str, create: bool = True) -> int:
        """The user id of ``external_id`` (your own string for a user) in the key's tenant,
        created on first use (docs/api.md#usersresolve). Resolving again answers the same
        id, so a retry is harmless. ``create=False`` only looks it up: an unknown
        external id raises ``NotFound`` (40401) and creates nothing."""
        body = body_of(external_id=external_id, create=None if create else False)
        return self._run(Call("POST", f"{V1}/users/resolve", body, None, part="user_id"))

    def purge(
        self,
        user_id: int | None = None,
        *,
        external_id: str | None = None,
        scope: Mapping[str, object] | None = None,
        request_id: str | None = None,
    ) -> Purged:
        """Everything of the user (crypto-shredded, and its external ids erased) or of a
        scope; admin keys only. The user by ``user_id`` or ``external_id``, exactly one."""
        return self._write(
            "purge",
            Purged,
            request_id,
            user_id=user_id,
            external_id=external_id,
            scope=dict(scope) if scope is not None else None,
        )

    def switch(self, user_id: int, enabled: bool, *, app_id: str | None = None) -> Switched:
        """Memory on or off for the user (no ``app_id``: globally, admin keys only) or for
        one app. Setting a value twice is harmless, so it is retried like a read."""
        return self._read("switch", Switched, user_id=user_id, app_id=app_id, enabled=enabled)

    def session_close(
        self,
        user_id: int,
        session_id: str,
        *,
        app_id: str | None = None,
        promote_ids: Sequence[str] | None = None,
        pending: bool | None = None,
        request_id: str | None = None,
    ) -> SessionClosed:
        """Promote the session's valuable memories (and ``promote_ids``), drop the rest;
        ``pending`` keeps a 24 h continuity memory."""
        return self._write(
            "session/close",
            SessionClosed,
            request_id,
            user_id=user_id,
            session_id=session_id,
            app_id=app_id,
            promote_ids=list(promote_ids) if promote_ids is not None else None,
            pending=pending,
        )

    def export(
        self, user_id: int | None = None, *, external_id: str | None = None
    ) -> ExportStarted:
        """Start an export of everything held about the user (admin keys only), named by
        ``user_id`` or ``external_id``. Each call starts another, so it is retried on 429
        (refused before it ran) but not on 503."""
        body = body_of(user_id=user_id, external_id=external_id)
        return self._run(Call("POST", f"{V1}/export", body, ExportStarted, idempotent=False))

    def put_item(
        self,
        user_id: int,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, object] | None,
        *,
        app_id: str | None = None,
        session_id: str | None = None,
        index: Literal[False] | Sequence[str] | None = None,
        request_id: str | None = None,
    ) -> ItemPut:
        """Put the key-value item at ``key`` in ``namespace`` of the scope (``value``
        None: delete it); answers once durable. ``index``: the value's field paths to
        embed (None: the whole value, False: not searchable by meaning)."""
        rid = request_id or new_request_id()
        body = body_of(
            user_id=user_id,
            app_id=app_id,
            session_id=session_id,
            namespace=list(namespace),
            key=key,
            index=list(index) if index else index,
            request_id=rid,
        )
        body["value"] = to_json(value)  # as given: a null inside it is the caller's
        return self._run(Call("POST", f"{V1}/items/put", body, ItemPut, request_id=rid))
