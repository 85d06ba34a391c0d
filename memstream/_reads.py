"""The read endpoints of ``/memory/v1`` and the waits on an add or an export, once for both
clients (``memstream.client``): each describes its call; the client's ``_run`` sends it.
A wait is a call repeated until its answer settles (``Call.until``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from memstream._transport import V1, Call, Runner, body_of, to_json
from memstream.errors import error_for
from memstream.schemas.enums import Level, MemType, OpType, Ownership, Role
from memstream.schemas.json_types import JsonObject
from memstream.schemas.responses import (
    ChangeLogPage,
    Context,
    Entities,
    EntityDetail,
    ExportStatus,
    History,
    Item,
    ItemNamespaces,
    ItemPage,
    Profile,
    RecallResult,
    TaskStatus,
    UserMemories,
)

ROLES = frozenset(r.value for r in Role)  # the turns the context call reads


def _task_failed(task: TaskStatus) -> None:
    """A failed add surfaces as the exception of its code (e.g. 50001 extraction failed)."""
    if task.status == "failed":
        raise error_for(task.code or 50000, f"task {task.task_id} failed: {task.reason or '?'}")


def _view_scope(app_id: str | None, include_global: bool | None) -> JsonObject | None:
    """An entity view's scope; None (left out) when the caller names neither part."""
    if app_id is None and include_global is None:
        return None
    scope: JsonObject = {"app_id": app_id} if app_id is not None else {}
    if include_global is not None:
        scope["include_global"] = include_global
    return scope


class Reads(Runner):
    def recall(
        self,
        user_id: int,
        query: str,
        *,
        app_id: str | None = None,
        session_id: str | None = None,
        include_global: bool | None = None,
        cross_app: bool | None = None,
        ownership: Sequence[Ownership | str] | None = None,
        mem_type: Sequence[MemType | str] | None = None,
        custom_tags: Sequence[str] | None = None,
        top_k: int | None = None,
        min_relevance: float | None = None,
        include_archived: bool | None = None,
        timeout_ms: int | None = None,
        as_of: datetime | None = None,
        max_chars: int | None = None,
    ) -> RecallResult:
        """The memories relevant to ``query`` that the scope allows, best first;
        ``max_chars``: only the best-ranked ones that fit whole into that many characters
        (the answer's ``chars_used`` says how many they take)."""
        scope: dict[str, str | bool | dict[str, bool] | None] = {
            "app_id": app_id,
            "session_id": session_id,
            "include_global": include_global,
        }
        if cross_app is not None:
            scope["cross_app"] = {"enabled": cross_app}
        filters = {"ownership": ownership, "mem_type": mem_type, "custom_tags": custom_tags}
        return self._read(
            "recall",
            RecallResult,
            user_id=user_id,
            query=query,
            scope=scope,
            filter={k: list(v) for k, v in filters.items() if v is not None},
            top_k=top_k,
            min_relevance=min_relevance,
            include_archived=include_archived,
            timeout_ms=timeout_ms,
            as_of=as_of,
            max_chars=max_chars,
        )

    def history(self, user_id: int, memory_id: str) -> History:
        """The memory, the chain of what it superseded and what superseded it, its changes."""
        return self._read("history", History, user_id=user_id, memory_id=memory_id)

    def change_log(
        self,
        user_id: int,
        *,
        app_id: str | None = None,
        level: Level | str | None = None,
        op_types: Sequence[OpType | str] | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> ChangeLogPage:
        """One page of the user's changes, newest first."""
        return self._read(
            "change_log",
            ChangeLogPage,
            user_id=user_id,
            app_id=app_id,
            level=level,
            op_types=list(op_types) if op_types is not None else None,
            start=start,
            end=end,
            page=page,
            page_size=page_size,
        )

    def user_list(
        self,
        user_id: int,
        *,
        include_deleted: bool | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> UserMemories:
        """One page of all the user's memories (history included), grouped by scope."""
        return self._read(
            "user/list",
            UserMemories,
            user_id=user_id,
            include_deleted=include_deleted,
            page=page,
            page_size=page_size,
        )

    def entities(
        self,
        user_id: int,
        *,
        app_id: str | None = None,
        include_global: bool | None = None,
        type: str | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> Entities:
        """One page of the user's entities (people, places, ...), most memories first:
        each with its type, other names, count of current memories and last seen.
        ``app_id``/``include_global`` narrow it as recall's scope does; neither: every
        memory the key may read."""
        return self._read(
            "entities",
            Entities,
            user_id=user_id,
            scope=_view_scope(app_id, include_global),
            type=type,
            page=page,
            page_size=page_size,
        )

    def entity(
        self,
        user_id: int,
        *,
        entity_id: str | None = None,
        name: str | None = None,
        app_id: str | None = None,
        include_global: bool | None = None,
        max_chars: int | None = None,
    ) -> EntityDetail:
        """One entity, by ``entity_id`` or ``name`` (exactly one; a name also matches an
        alias, any case): a summary of what is true of it now (within ``max_chars``) and
        every memory naming it in time order, superseded ones included. A name two
        entities share answers both in ``entities``; none: ``NotFound`` (40401)."""
        return self._read(
            "entity",
            EntityDetail,
            user_id=user_id,
            scope=_view_scope(app_id, include_global),
            entity_id=entity_id,
            name=name,
            max_chars=max_chars,
        )

    def profile(
        self,
        user_id: int,
        *,
        app_id: str | None = None,
        include_global: bool | None = None,
        entity: str | None = None,
        max_chars: int | None = None,
    ) -> Profile:
        """Who the user is and what matters now, for the start of a session: items in
        reading order that fit ``max_chars`` (default 2,000) whole, each citing exactly
        the memories and turns it states. ``app_id``: that app's memories and (unless
        ``include_global`` is false) the GLOBAL ones; none: the GLOBAL profile.
        ``entity`` (a name or an entity_id) narrows it to the memories naming it."""
        return self._read(
            "profile",
            Profile,
            user_id=user_id,
            scope=_view_scope(app_id, include_global),
            entity=entity,
            max_chars=max_chars,
        )

    def context(
        self,
        user_id: int,
        *,
        messages: Sequence[Mapping[str, str]] | None = None,
        query: str | None = None,
        app_id: str | None = None,
        include_global: bool | None = None,
        max_chars: int | None = None,
        count_hit: bool | None = None,
    ) -> Context:
        """What to put in the prompt for the agent's next turn: the profile, the memories
        relevant to ``query`` (else to the last user turns of ``messages``, ``{role,
        content}`` dicts as a chat API writes them) and the entities they name, as
        ``items`` and one ``text`` that fits ``max_chars`` (default 2,000) whole.
        ``count_hit`` false: the memories shown are not counted as recall hits. Of each
        message only ``role`` and ``content`` are sent; a turn of another role than
        user, assistant or system (a tool's) or without text content is left out."""
        turns = None
        if messages is not None:
            turns = [
                {"role": m["role"], "content": m["content"]}
                for m in messages
                if m.get("role") in ROLES and isinstance(m.get("content"), str)
            ]
        return self._read(
            "context",
            Context,
            user_id=user_id,
            scope=_view_scope(app_id, include_global),
            messages=turns,
            query=query,
            max_chars=max_chars,
            count_hit=count_hit,
        )

    def get_item(
        self,
        user_id: int,
        namespace: Sequence[str],
        key: str,
        *,
        app_id: str | None = None,
        session_id: str | None = None,
    ) -> Item | None:
        """The key-value item at ``key`` in ``namespace`` of the scope; None when absent."""
        body = body_of(
            user_id=user_id,
            app_id=app_id,
            session_id=session_id,
            namespace=list(namespace),
            key=key,
        )
        call = Call("POST", f"{V1}/items/get", body, Item, part="item", none_if_missing=True)
        return self._run(call)

    def search_items(
        self,
        user_id: int,
        namespace_prefix: Sequence[str] = (),
        *,
        app_id: str | None = None,
        session_id: str | None = None,
        query: str | None = None,
        filter: Mapping[str, object] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        subtree: bool = False,
    ) -> ItemPage:
        """The scope's items under ``namespace_prefix`` whose values pass ``filter``
        (``{field: value}`` or ``{field: {"$gt": value}}``, ``$eq $ne $gt $gte $lt $lte``):
        by relevance to ``query`` (``score``), else most recently updated first.
        ``subtree``: also the scopes beneath it the key may read (GLOBAL: every app's
        and session's; an app: its sessions'); each item names its ``app_id`` and
        ``session_id``."""
        body = body_of(
            user_id=user_id,
            app_id=app_id,
            session_id=session_id,
            namespace_prefix=list(namespace_prefix),
            query=query,
            limit=limit,
            offset=offset,
            subtree=True if subtree else None,
        )
        if filter:
            body["filter"] = to_json(filter)  # a null to match is the caller's
        return self._run(Call("POST", f"{V1}/items/search", body, ItemPage))

    def list_item_namespaces(
        self,
        user_id: int,
        *,
        app_id: str | None = None,
        session_id: str | None = None,
        prefix: Sequence[str] | None = None,
        suffix: Sequence[str] | None = None,
        max_depth: int | None = None,
        limit: int | None = None,
        offset: int | None = None,
        subtree: bool = False,
    ) -> ItemNamespaces:
        """The distinct namespaces of the scope's items (``"*"`` in ``prefix`` or
        ``suffix``: any one label), cut to ``max_depth`` labels, sorted; ``subtree``:
        also of the scopes beneath it the key may read, as ``search_items``."""
        return self._read(
            "items/namespaces",
            ItemNamespaces,
            user_id=user_id,
            app_id=app_id,
            session_id=session_id,
            prefix=list(prefix) if prefix is not None else None,
            suffix=list(suffix) if suffix is not None else None,
            max_depth=max_depth,
            limit=limit,
            offset=offset,
            subtree=True if subtree else None,
        )

    def task(self, task_id: str) -> TaskStatus:
        """The status of an ``add``."""
        return self._run(Call("GET", f"{V1}/tasks/{task_id}", None, TaskStatus))

    def wait_task(
        self, task_id: str, *, timeout_s: float = 60.0, every_s: float = 0.2
    ) -> TaskStatus:
        """Poll ``tasks/{task_id}`` until the add is applied: its status when ``done``;
        a failed add raises its code's exception; ``TaskPending`` after ``timeout_s``."""
        return self._run(
            Call(
                "GET",
                f"{V1}/tasks/{task_id}",
                None,
                TaskStatus,
                until=lambda t: t.settled,
                poll_s=timeout_s,
                poll_every_s=every_s,
                check=_task_failed,
            )
        )

    def export_status(self, export_id: str, *, link_ttl_s: int | None = None) -> ExportStatus:
        """An export's state; once ``done`` it carries a signed download ``url``."""
        path = f"{V1}/export/{export_id}"
        if link_ttl_s is not None:
            path += f"?link_ttl_s={int(link_ttl_s)}"
        return self._run(Call("GET", path, None, ExportStatus))

    def wait_export(
        self, export_id: str, *, timeout_s: float = 60.0, every_s: float = 0.2
    ) -> ExportStatus:
        """Poll ``export_status`` until the export is no longer running."""
        return self._run(
            Call(
                "GET",
                f"{V1}/export/{export_id}",
                None,
                ExportStatus,
                until=lambda x: x.status != "running",
                poll_s=timeout_s,
                poll_every_s=every_s,
            )
        )

    def download_export(self, url: str) -> list[JsonObject]:
        """The lines of a finished export (``ExportStatus.url``, a signed link)."""
        return self._run(Call("GET", url, None, "ndjson"))
