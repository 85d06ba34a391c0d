"""Key-value items (docs/api.md#key-value-items): put through the keyed writer (durable
when it answers, as add_structured), get, search and list namespaces from the stores.

An item belongs to one scope: the user's GLOBAL items, an app's, or a session's
(``session_id``, within ``app_id`` when given). A read is of the scope it names, so one
app's items never show in another's; a search or a listing with ``subtree`` also reads
the scopes beneath it (GLOBAL: every app and session; an app: its sessions), of those
the key may read. An app key reads and writes its own apps' (and GLOBAL ones only with
the global grant to write). The memory switch holds for items as for recall: a
switched-off user or named app is 40301 for every call, and a subtree read leaves out
the apps switched off beneath it.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from core.kv_items import (
    ItemView,
    cosines,
    embedded_text,
    filter_problem,
    in_scope,
    item_id,
    list_namespaces,
    matches,
    rank,
    recent,
    view_of,
)
from memstream.schemas.api import Envelope
from memstream.schemas.enums import KEYED_TYPES, Level, Status
from memstream.schemas.errors import ErrorCode
from memstream.schemas.items import (
    ItemGetRequest,
    ItemNamespacesRequest,
    ItemPutPayload,
    ItemPutRequest,
    ItemSearchRequest,
)
from memstream.schemas.responses import Item, ItemFound, ItemNamespaces, ItemPage, ItemPut
from recall_api.access import Caller
from recall_api.commands import send
from recall_api.deps import CallerDep, RecallerDep, ServicesDep
from recall_api.errors import ApiError, ok
from recall_api.routes.add import check_switch
from sinks.services import Services

router = APIRouter(prefix="/memory/v1/items", tags=["items"])


def _level(app_id: str | None, session_id: str | None) -> Level:
    return Level.SESSION if session_id else Level.APP if app_id else Level.GLOBAL


def _item(v: ItemView, score: float | None = None) -> Item:
    return Item(
        namespace=list(v.namespace),
        key=v.key,
        value=v.value,
        created_at=v.created_at,
        updated_at=v.updated_at,
        memory_id=v.memory_id,
        score=score,
        app_id=v.app_id,
        session_id=v.session_id,
    )


def _scope_items(
    svc: Services,
    caller: Caller,
    user_id: int,
    app_id: str | None,
    session_id: str | None,
    subtree: bool = False,
) -> list[ItemView]:
    """The ACTIVE items the caller may read of one scope, or with ``subtree`` of it and
    the scopes beneath it but those of apps switched off (a user's items are bounded by
    ``item_limit`` per scope: read whole, filtered here)."""
    caller.check_app(app_id)
    check_switch(svc, user_id, app_id, caller.tenant)
    off: frozenset[str] = frozenset()
    if subtree:
        off = svc.switches.get(user_id, tenant=caller.tenant).disabled_apps
    rows = svc.memories.load(
        user_id, statuses=[Status.ACTIVE], mem_types=KEYED_TYPES, tenant=caller.tenant
    )
    views = []
    for r in caller.visible(rows):
        app, session = r.app_id or None, r.session_id or None
        if app in off or not in_scope(app, session, app_id, session_id, subtree):
            continue
        if (v := view_of(r)) is not None:
            views.append(v)
    return views


@router.post("/put", response_model=Envelope[ItemPut])
async def put(body: ItemPutRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """Put (or, with ``value`` null, delete) the item at ``key`` in ``namespace``."""
    caller.check_write_scope(_level(body.app_id, body.session_id), body.app_id)
    check_switch(svc, body.user_id, body.app_id, caller.tenant)
    payload = ItemPutPayload.model_validate(
        body.model_dump(exclude={"request_id", "user_id"}, exclude_unset=True)
    )
    data = await send(svc, caller, "item_put", body, payload, endpoint="items/put")
    return ok(ItemPut.model_validate(data))


@router.post("/get", response_model=Envelope[ItemFound])
def get(body: ItemGetRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    caller.check_app(body.app_id)
    t = caller.tenant
    check_switch(svc, body.user_id, body.app_id, t)
    mid = item_id(t, body.user_id, body.app_id, body.session_id, body.namespace, body.key)
    rows = svc.memories.load(body.user_id, memory_ids=[mid], tenant=t)
    rec = next((r for r in rows if r.status is Status.ACTIVE and caller.can_read(r)), None)
    view = view_of(rec) if rec is not None else None
    if view is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no item '{body.key}' in namespace {body.namespace}")
    return ok(ItemFound(item=_item(view)))


@router.post("/search", response_model=Envelope[ItemPage])
def search(
    body: ItemSearchRequest, svc: ServicesDep, caller: CallerDep, recaller: RecallerDep
) -> Response:
    """Items under ``namespace_prefix`` whose values pass ``filter``: ranked by relevance
    to ``query`` (recall's fusion, ``score`` set), else most recently updated first."""
    flt = body.filter or {}
    if (problem := filter_problem(flt)) is not None:
        raise ApiError(ErrorCode.BAD_PARAMETER, problem)
    views = _scope_items(svc, caller, body.user_id, body.app_id, body.session_id, body.subtree)
    n = len(body.namespace_prefix)
    prefix = tuple(body.namespace_prefix)
    views = [v for v in views if v.namespace[:n] == prefix and matches(v.value, flt)]
    ranked: list[tuple[ItemView, float | None]]
    if body.query:
        fusion = svc.settings.recall_fusion
        dense = None
        if fusion != "lexical":
            qvec = svc.embedder.embed_query(body.query)
            texts = {v.memory_id: embedded_text(v.value, v.index) for v in views if v.searchable}
            vectors = svc.memories.vectors(list(texts)) if texts else {}
            dense = recaller.dense_relevance(body.query, qvec, cosines(qvec, vectors), texts)
        ranked = rank(views, body.query, dense, fusion)
    else:
        ranked = [(v, None) for v in recent(views)]
    page = ranked[body.offset : body.offset + body.limit]
    return ok(ItemPage(items=[_item(v, s) for v, s in page]))


@router.post("/namespaces", response_model=Envelope[ItemNamespaces])
def namespaces(body: ItemNamespacesRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """The distinct namespaces of the scope's items (LangGraph's ``list_namespaces``)."""
    views = _scope_items(svc, caller, body.user_id, body.app_id, body.session_id, body.subtree)
    found = list_namespaces([v.namespace for v in views], body.prefix, body.suffix, body.max_depth)
    page = found[body.offset : body.offset + body.limit]
    return ok(ItemNamespaces(namespaces=[list(ns) for ns in page]))
