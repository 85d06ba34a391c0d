"""LangGraph's long-term memory kept in memstream (docs/api.md#langgraph-store):
``MemstreamStore`` is a ``langgraph.store.base.BaseStore`` whose items are memstream's
key-value items (``items/put``, ``items/get``, ``items/search``, ``items/namespaces``), so
a graph's ``store.put``/``store.search`` and LangMem's memory tools keep the agent's
memory in the service.

    from memstream.langgraph import MemstreamStore

    store = MemstreamStore(url="http://127.0.0.1:8000", api_key="msk_...")
    graph = builder.compile(store=store)

Namespaces. memstream keeps memory per user, and per app and session within a user; a
LangGraph namespace is any tuple of labels. ``namespace_map`` says which labels name whom:
a function from a namespace to a ``Scope(user, app_id, session_id)``. The default,
``by_position(user=0, app_id=1, session_id=2)``, reads ``(user, app_id, session_id, ...)``;
LangMem's ``("memories", "{user_id}")`` is ``by_position(user=1, app_id=0)``. A user given
as a string is an external id, resolved once per store to memstream's numeric id
(``users/resolve``); an int is memstream's id itself. The server keeps the whole namespace
on each item, so search and list_namespaces answer the caller's own tuples.

Reads cover a prefix's subtree. A search's or a listing's prefix must name the user; under
a ``by_position`` map a prefix that stops above the app's or the session's label reads the
scope it names and every scope beneath it the key may read (``items/search`` with
``subtree``): under the default map ``("alice",)`` finds alice's GLOBAL items and her
apps' and sessions' (``("alice", "chat", "s1")``), ``("alice", "chat")`` that app's and
its sessions'. A map of your own reads the one scope a prefix maps to.

A string user is resolved with ``create`` for a put only: a read of an external id that
names no user yet creates nothing and finds nothing (get None, search and list empty).

Batches behave as LangGraph's reference stores': the reads of a batch (get, search,
list_namespaces) see the store as it was before the batch's puts, which follow them, the
last put of a key winning. ``abatch`` sends the reads at once, then the puts, on an
``AsyncClient``.

Import this module explicitly; ``import memstream`` does not import LangGraph.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, cast

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # the client installs without it (docs/operations.md#installing)
    raise ImportError(
        "memstream.langgraph needs LangGraph, which the client does not install: "
        "pip install 'memstream[langgraph]'"
    ) from exc

from memstream.client import AsyncClient, Client
from memstream.errors import NotFound
from memstream.schemas.responses import Item as ApiItem
from memstream.schemas.responses import ItemNamespaces, ItemPage

__all__ = ["MemstreamStore", "NamespaceMap", "Scope", "by_position"]

WILDCARD = "*"  # LangGraph's one-label wildcard in list_namespaces' prefix and suffix
MAX_CONCURRENT = 16  # calls one abatch keeps in flight
_NEEDS_USER = (
    "memstream keeps each user's items apart, so a {what} needs a namespace (or prefix) "
    "that names the user (docs/api.md#langgraph-store)"
)


class Scope(NamedTuple):
    """Whose memory a namespace is: ``user`` (an external id string, resolved through
    ``users/resolve``, or memstream's int user id), and the app and session within it
    (the item's level follows: SESSION, APP, else GLOBAL)."""

    user: str | int
    app_id: str | None = None
    session_id: str | None = None


NamespaceMap = Callable[[tuple[str, ...]], Scope | tuple[str | int, str | None, str | None]]


def by_position(user: int = 0, app_id: int | None = 1, session_id: int | None = 2) -> NamespaceMap:
    """A namespace map reading the user, the app and the session at these label
    positions (``None``: never read). An app or session label the namespace lacks is none:
    ``("alice",)`` is alice's GLOBAL scope. As a read's prefix, one that lacks a label
    this map reads (or, in a listing's prefix, has ``*`` there) reads its scope's subtree:
    ``("alice",)`` every scope of alice's. Labels past those read are the caller's own
    collections within the scope."""
    return _Positions(user, app_id, session_id)


@dataclass(frozen=True)
class _Positions:
    """``by_position``'s map: it knows which labels name a scope, so a read's prefix that
    stops above one reads the subtree beneath it."""

    user: int
    app_id: int | None
    session_id: int | None

    def __call__(self, namespace: tuple[str, ...]) -> Scope:
        if len(namespace) <= self.user:
            raise ValueError(f"no user label at position {self.user}")
        app, session = _label(namespace, self.app_id), _label(namespace, self.session_id)
        return Scope(namespace[self.user], app, session)

    def prefix_scope(self, prefix: tuple[str, ...], wildcards: bool) -> tuple[Scope, bool]:
        """The scope a read's ``prefix`` names and whether it reads the subtree beneath
        (a label of the app or the session is absent, or with ``wildcards`` a ``*``). A
        session is read within its app: with the app unnamed, the user's whole subtree,
        the session's label left to the prefix's filter on the namespaces."""
        scope = self(prefix)
        app, session = scope.app_id, scope.session_id
        if wildcards:
            app = None if app == WILDCARD else app
            session = None if session == WILDCARD else session
        no_app = self.app_id is not None and app is None
        no_session = self.session_id is not None and session is None
        return Scope(scope.user, app, None if no_app else session), no_app or no_session


def _label(namespace: tuple[str, ...], at: int | None) -> str | None:
    return namespace[at] if at is not None and at < len(namespace) else None


@dataclass(frozen=True)
class _Step:
    """One API call of a batch: ``send`` calls the client for the resolved user (an
    answer, or its awaitable on an ``AsyncClient``); ``read`` makes it the op's result."""

    slot: int
    scope: Scope
    send: Callable[[Any, int], Any]
    read: Callable[[Any], Result]
    empty: Result = None  # a read's result for an external id that names no user yet


@dataclass(frozen=True)
class _Plan:
    size: int
    reads: list[_Step]
    puts: list[_Step]


def _external_ids(steps: Iterable[_Step]) -> set[str]:
    return {s.scope.user for s in steps if isinstance(s.scope.user, str)}


class MemstreamStore(BaseStore):
    """A LangGraph ``BaseStore`` on memstream's HTTP API (see the module doc).

    ``client``/``async_client``: memstream clients of your own; else ``url`` and
    ``api_key`` (else ``MEMSTREAM_API_URL`` and ``MEMSTREAM_API_KEY``) make the store's own,
    closed by ``close``/``aclose``. Given only ``client``, the async methods run the sync
    calls in a thread; given only ``async_client``, the sync methods raise.
    ``namespace_map``: a namespace to its ``Scope`` (default ``by_position()``).
    ``index``: LangGraph's index config, of which memstream reads ``fields`` (what to embed
    of a value; default the whole value); the server embeds with its own model."""

    supports_ttl = False

    def __init__(
        self,
        client: Client | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        namespace_map: NamespaceMap | None = None,
        index: Mapping[str, Any] | None = None,
        async_client: AsyncClient | None = None,
    ):
        if (client is not None or async_client is not None) and (
            url is not None or api_key is not None
        ):
            raise ValueError("pass either client/async_client or url and api_key, not both")
        self.namespace_map = namespace_map or by_position()
        self.index_config = _index_config(index)
        self._fields: list[str] | None = self.index_config.get("fields")
        self._users: dict[str, int] = {}  # external id -> memstream user id
        self._given = client is not None or async_client is not None
        self._url, self._api_key = url, api_key
        self._client = client
        self._async_client = async_client
        self._owned_async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncClient]
        self._owned_async = weakref.WeakKeyDictionary()
        if client is None and async_client is None:
            self._client = self._open(Client)

    def _open(self, kind: type[Client] | type[AsyncClient]) -> Any:
        if self._url is None and self._api_key is None:
            return kind.from_env()
        if self._url is None:
            return kind.from_env(api_key=self._api_key)
        return kind(self._url, self._api_key)

    # -- LangGraph's two entry points ------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = self._plan(ops)
        client = self._client
        if client is None:
            raise RuntimeError(
                "this MemstreamStore has only an AsyncClient: use the async methods "
                "(aget, aput, asearch, ...) or pass client= as well"
            )
        for external_id in sorted(_external_ids(plan.puts) - self._users.keys()):
            self._users[external_id] = client.resolve_user(external_id)
        unknown: set[str] = set()
        for external_id in sorted(_external_ids(plan.reads) - self._users.keys()):
            try:
                self._users[external_id] = client.resolve_user(external_id, create=False)
            except NotFound:
                unknown.add(external_id)
        results: list[Result] = [None] * plan.size
        for step in (*plan.reads, *plan.puts):
            if step.scope.user in unknown:
                results[step.slot] = step.empty
            else:
                results[step.slot] = step.read(step.send(client, self._user_id(step.scope)))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        client = self._aclient()
        if client is None:  # only a sync client: LangGraph's sync stores do the same
            return await asyncio.get_running_loop().run_in_executor(None, self.batch, ops)
        plan = self._plan(ops)
        missing = sorted(_external_ids(plan.puts) - self._users.keys())
        # an AsyncClient's method answers an awaitable (its signature says the answer)
        ids = await _gather([cast(Awaitable[int], client.resolve_user(e)) for e in missing])
        self._users.update(zip(missing, ids, strict=True))

        async def lookup(external_id: str) -> int | None:
            try:
                return await cast(Awaitable[int], client.resolve_user(external_id, create=False))
            except NotFound:
                return None

        looked = sorted(_external_ids(plan.reads) - self._users.keys())
        found = await _gather([lookup(e) for e in looked])
        self._users.update((e, u) for e, u in zip(looked, found, strict=True) if u is not None)
        unknown = {e for e, u in zip(looked, found, strict=True) if u is None}
        results: list[Result] = [None] * plan.size
        for group in (plan.reads, plan.puts):
            sent = [s for s in group if s.scope.user not in unknown]
            answers = await _gather([s.send(client, self._user_id(s.scope)) for s in sent])
            for step, answer in zip(sent, answers, strict=True):
                results[step.slot] = step.read(answer)
            for step in group:
                if step.scope.user in unknown:
                    results[step.slot] = step.empty
        return results

    # -- planning: every op mapped and checked before any call ------------------------

    def _plan(self, ops: Iterable[Op]) -> _Plan:
        reads: list[_Step] = []
        puts: dict[tuple[tuple[str, ...], str], _Step] = {}  # the last put of a key wins
        size = 0
        for slot, op in enumerate(ops):
            size = slot + 1
            if isinstance(op, GetOp):
                reads.append(self._get(slot, op))
            elif isinstance(op, SearchOp):
                reads.append(self._search(slot, op))
            elif isinstance(op, ListNamespacesOp):
                reads.append(self._list(slot, op))
            elif isinstance(op, PutOp):
                puts.pop((tuple(op.namespace), op.key), None)
                puts[(tuple(op.namespace), op.key)] = self._put(slot, op)
            else:
                raise ValueError(f"unknown operation type: {type(op).__name__}")
        return _Plan(size, reads, list(puts.values()))

    def _get(self, slot: int, op: GetOp) -> _Step:
        namespace = _checked(op.namespace)
        scope = self._scope(namespace, "get")
        return _Step(
            slot,
            scope,
            lambda c, uid: c.get_item(
                user_id=uid,
                app_id=scope.app_id,
                session_id=scope.session_id,
                namespace=list(namespace),
                key=str(op.key),
            ),
            _item_of,
        )

    def _put(self, slot: int, op: PutOp) -> _Step:
        namespace = _checked(op.namespace)
        if not namespace:
            raise InvalidNamespaceError("namespace cannot be empty")
        if op.ttl is not None:  # as BaseStore.put answers a store with supports_ttl False
            raise NotImplementedError(
                "TTL is not supported by MemstreamStore: items stay until deleted "
                "(docs/api.md#langgraph-store); put with ttl=None"
            )
        if op.value is not None and not isinstance(op.value, Mapping):
            raise TypeError(f"put: a value is a mapping (a JSON object) or None, not {op.value!r}")
        scope = self._scope(namespace, "put")
        value = None if op.value is None else dict(op.value)
        index = None if value is None else self._index_of(op.index)
        return _Step(
            slot,
            scope,
            lambda c, uid: c.put_item(
                user_id=uid,
                app_id=scope.app_id,
                session_id=scope.session_id,
                namespace=list(namespace),
                key=str(op.key),
                value=value,
                index=index,
            ),
            lambda _answer: None,
        )

    def _search(self, slot: int, op: SearchOp) -> _Step:
        prefix = _checked(op.namespace_prefix)
        scope, subtree = self._read_scope(prefix, "search", wildcards=False)
        query = op.query if op.query and op.query.strip() else None
        return _Step(
            slot,
            scope,
            lambda c, uid: c.search_items(
                user_id=uid,
                app_id=scope.app_id,
                session_id=scope.session_id,
                namespace_prefix=list(prefix),
                query=query,
                filter=op.filter or None,
                limit=op.limit,
                offset=op.offset,
                subtree=subtree,
            ),
            _search_items_of,
            [],
        )

    def _list(self, slot: int, op: ListNamespacesOp) -> _Step:
        prefix: tuple[str, ...] | None = None
        suffix: tuple[str, ...] | None = None
        for condition in op.match_conditions or ():
            path = _checked(tuple(condition.path))
            if condition.match_type == "prefix":
                prefix = path
            elif condition.match_type == "suffix":
                suffix = path
            else:
                raise ValueError(f"unknown match type: {condition.match_type!r}")
        scope, subtree = self._read_scope(prefix or (), "list_namespaces", wildcards=True)
        return _Step(
            slot,
            scope,
            lambda c, uid: c.list_item_namespaces(
                user_id=uid,
                app_id=scope.app_id,
                session_id=scope.session_id,
                prefix=list(prefix) if prefix else None,
                suffix=list(suffix) if suffix else None,
                max_depth=op.max_depth,
                limit=op.limit,
                offset=op.offset,
                subtree=subtree,
            ),
            _namespaces_of,
            [],
        )

    def _read_scope(
        self, prefix: tuple[str, ...], what: str, *, wildcards: bool
    ) -> tuple[Scope, bool]:
        """The scope a read's ``prefix`` names and whether it reads the subtree beneath
        it: under ``by_position``, a prefix stopping above the app's or session's label
        (``_Positions.prefix_scope``); under a map of one's own, its one scope."""
        positions = self.namespace_map
        if not isinstance(positions, _Positions):
            return self._scope(prefix, what), False
        scope = self._scope(prefix, what, lambda ns: positions.prefix_scope(ns, wildcards)[0])
        return scope, positions.prefix_scope(prefix, wildcards)[1]

    def _scope(
        self,
        namespace: tuple[str, ...],
        what: str,
        mapper: NamespaceMap | None = None,
    ) -> Scope:
        """The namespace's ``Scope`` through ``namespace_map`` (or ``mapper``); a namespace
        that does not map (or names no user: memstream keeps each user's items apart, and
        searches and lists one user's) is an ``InvalidNamespaceError`` naming it."""
        try:
            found = (mapper or self.namespace_map)(namespace)
            if not isinstance(found, tuple) or not 1 <= len(found) <= 3:
                raise TypeError(f"namespace_map gave {found!r}, not a Scope")
            scope = Scope(*found)
        except Exception as exc:
            raise InvalidNamespaceError(
                f"{what}: the namespace {namespace!r} does not map to a memstream user "
                f"({exc}); {_NEEDS_USER.format(what=what)}"
            ) from exc
        user = scope.user
        if isinstance(user, bool) or not isinstance(user, str | int) or user == "":
            raise InvalidNamespaceError(
                f"{what}: the namespace {namespace!r} maps to no user ({user!r}); "
                + _NEEDS_USER.format(what=what)
            )
        if WILDCARD in scope:
            raise InvalidNamespaceError(
                f"{what}: {namespace!r} has '*' in a label that names the user, app or "
                f"session {scope!r}: memstream reads one user's memory at a time, and a '*' "
                "stands for any app or session only in a list_namespaces prefix under "
                "by_position (docs/api.md#langgraph-store)"
            )
        return scope

    def _index_of(
        self, index: Literal[False] | list[str] | None
    ) -> Literal[False] | list[str] | None:
        """What the server embeds of a value: ``False`` nothing, ``None`` the whole value
        (the server's default), else these field paths (the put's, else the store's)."""
        if index is False:
            return False
        fields = _paths(index) if index is not None else self._fields
        if fields == []:
            return False  # no field: nothing to embed
        return None if fields is None or "$" in fields else fields

    def _user_id(self, scope: Scope) -> int:
        return scope.user if isinstance(scope.user, int) else self._users[scope.user]

    def resolved_users(self) -> Mapping[str, int]:
        """The external ids this store has resolved so far, to memstream's user ids."""
        return dict(self._users)

    def forget_users(self, *external_ids: str) -> None:
        """Drop these resolutions (none named: all), so the next call resolves again:
        after a whole purge the string names a new user (docs/api.md#usersresolve), and a
        store that kept the old id would write under the purged one."""
        if not external_ids:
            self._users.clear()
        for external_id in external_ids:
            self._users.pop(external_id, None)

    # -- clients -----------------------------------------------------------------------

    def _aclient(self) -> AsyncClient | None:
        """The caller's ``AsyncClient``, else the store's own for the running loop (an
        httpx async client holds connections of one event loop), else none."""
        if self._async_client is not None:
            return self._async_client
        if self._given:
            return None
        loop = asyncio.get_running_loop()
        client = self._owned_async.get(loop)
        if client is None:
            client = self._owned_async[loop] = self._open(AsyncClient)
        return client

    def close(self) -> None:
        """Close the clients the store opened (a caller's own stay open)."""
        if not self._given and self._client is not None:
            self._client.close()

    async def aclose(self) -> None:
        self.close()
        client = self._owned_async.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    def __enter__(self) -> MemstreamStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MemstreamStore:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


def _index_config(index: Mapping[str, Any] | None) -> dict[str, Any]:
    """LangGraph's ``IndexConfig`` as memstream reads it: ``fields`` only."""
    if index is None:
        return {}
    unknown = set(index) - {"fields"}
    if unknown:
        raise ValueError(
            f"index: memstream embeds items on the server with its own model, so it takes "
            f"only 'fields' (what to embed), not {sorted(unknown)}"
        )
    fields = index.get("fields")
    if fields is not None and (
        isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields)
    ):
        raise ValueError(f"index.fields must be a list of field paths, not {fields!r}")
    return {"fields": _paths(fields) if fields is not None else None}


_AT = re.compile(r"\[(\d+)\]")


def _paths(paths: Sequence[str]) -> list[str]:
    """LangGraph's field paths as the server reads them: ``a.b`` and ``list[0]`` (sent as
    ``list.0``); ``$`` the whole value. Its wildcards (``[*]``, ``*``, ``{a,b}``) and
    negative indexes would embed nothing there, so they are refused rather than dropped."""
    out = []
    for path in paths:
        dotted = _AT.sub(r".\1", path)
        if path != "$" and any(c in dotted for c in "[]{}*$"):
            raise ValueError(
                f"index path {path!r}: memstream embeds top-level and dotted fields "
                "('text', 'a.b', 'list[0]'), not wildcards or negative indexes "
                "(docs/api.md#langgraph-store)"
            )
        out.append(dotted)
    return out


def _checked(namespace: Sequence[str]) -> tuple[str, ...]:
    """LangGraph's own label rules (strings, not empty, no '.'), also for ops handed
    straight to ``batch``; the server checks its limits (docs/api.md#key-value-items)."""
    namespace = tuple(namespace)
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {namespace!r}: labels are "
                "non-empty strings without '.'"
            )
    return namespace


async def _gather(calls: Sequence[Awaitable[Any]]) -> list[Any]:
    """The answers of ``calls``, at most ``MAX_CONCURRENT`` in flight; the first error
    raises once all have ended (no call is left running behind the caller)."""
    gate = asyncio.Semaphore(MAX_CONCURRENT)

    async def one(call: Awaitable[Any]) -> Any:
        async with gate:
            return await call

    answers = await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)
    for answer in answers:
        if isinstance(answer, BaseException):
            raise answer
    return answers


def _item_of(found: ApiItem | None) -> Item | None:
    if found is None:
        return None
    return Item(
        namespace=tuple(found.namespace),
        key=found.key,
        value=found.value,
        created_at=found.created_at,
        updated_at=found.updated_at,
    )


def _search_items_of(page: ItemPage) -> list[SearchItem]:
    return [
        SearchItem(
            namespace=tuple(i.namespace),
            key=i.key,
            value=i.value,
            created_at=i.created_at,
            updated_at=i.updated_at,
            score=i.score,
        )
        for i in page.items
    ]


def _namespaces_of(answer: ItemNamespaces) -> list[tuple[str, ...]]:
    return [tuple(ns) for ns in answer.namespaces]
