"""Privacy endpoints: user/list, purge, switch, export (+ status and signed download)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Response
from fastapi.responses import StreamingResponse

from memstream.schemas.api import Envelope
from memstream.schemas.enums import DERIVED_TYPES, Level, MemType, Status
from memstream.schemas.errors import ErrorCode
from memstream.schemas.payloads import DeletePayload, DeleteScopeSpec
from memstream.schemas.requests import ExportRequest, PurgeRequest, SwitchRequest, UserListRequest
from memstream.schemas.responses import (
    ExportStarted,
    ExportStatus,
    Memory,
    Purged,
    ScopedMemories,
    Switched,
    UserMemories,
)
from recall_api import export, users
from recall_api.commands import run_command
from recall_api.deps import CallerDep, ServicesDep
from recall_api.errors import ApiError, ok

router = APIRouter(prefix="/memory/v1", tags=["privacy"])


def group_by_scope(items: list[Memory]) -> ScopedMemories:
    glob: list[Memory] = []
    apps: dict[str, list[Memory]] = {}
    sessions: dict[str, list[Memory]] = {}
    for m in items:
        if m.level == Level.GLOBAL:
            glob.append(m)
        elif m.level == Level.APP:
            apps.setdefault(str(m.app_id), []).append(m)
        else:
            sessions.setdefault(str(m.session_id), []).append(m)
    return ScopedMemories(GLOBAL=glob, APP=apps, SESSION=sessions)


@router.post("/user/list", response_model=Envelope[UserMemories])
def user_list(body: UserListRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """All of a user's memories (history included), grouped by scope, oldest first; the
    profiles the key may read (derived, docs/architecture.md#the-profile) in
    ``profiles``, apart from the memories they are made from and not counted in
    ``total``."""
    statuses = [Status.ACTIVE, Status.ARCHIVED, Status.SUPERSEDED]
    if body.include_deleted:
        statuses.append(Status.DELETED)
    everything = caller.visible(
        svc.memories.load(
            body.user_id, statuses=statuses, tenant=caller.tenant, mem_types=list(MemType)
        )
    )
    rows = sorted(
        (r for r in everything if r.mem_type not in DERIVED_TYPES),
        key=lambda r: (r.created_at, r.memory_id),
    )
    profiles = sorted(
        (r for r in everything if r.mem_type in DERIVED_TYPES),
        key=lambda r: (r.app_id or "", r.memory_id),
    )
    start = (body.page - 1) * body.page_size
    page = [Memory.of(r) for r in rows[start : start + body.page_size]]
    return ok(
        UserMemories(
            profiles=[Memory.of(r) for r in profiles],
            memories=group_by_scope(page),
            total=len(rows),
            page=body.page,
            page_size=body.page_size,
            has_more=start + body.page_size < len(rows),
        )
    )


@router.post("/purge", response_model=Envelope[Purged])
async def purge(body: PurgeRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """Everything of the user (or of a scope) leaves recall at once; durable soft delete;
    the lifecycle removes it physically after the retention (the answer says when).
    Admin keys only (an app key deletes its own memories with batch_delete). The user is
    named by ``user_id`` or ``external_id``; a whole purge also erases the user's external
    ids (docs/architecture.md#external-user-ids)."""
    caller.require_admin("purge")
    user_id = await users.user_of(svc, caller, body)
    scope = DeleteScopeSpec.model_validate(
        body.scope.model_dump(exclude_none=True) if body.scope else {}
    )
    payload = DeletePayload(scope=scope, reason="purge requested")
    shredded = None
    if body.scope is None:
        # Crypto-shredding first: destroying the user's data key makes every sealed copy
        # (stores, topics, snapshots, exports, backups) unreadable at once; the writer
        # destroys it again in its order (``shred``), so nothing written meanwhile
        # survives either. A scoped purge keeps the key (the user's other memories).
        await asyncio.to_thread(svc.memories.cipher.destroy, user_id, caller.tenant)
        shredded = export.delete_user_exports(svc, user_id, caller.tenant)
        payload = payload.model_copy(update={"shred": True})
    data = await run_command(
        svc,
        "delete",
        user_id,
        payload,
        body.request_id,
        tenant=caller.tenant,
        caller=caller,
        endpoint="purge",
    )
    if body.scope is None:  # after the purge, so that a retry by external_id finds the user
        await asyncio.to_thread(users.forget, svc, caller.tenant, user_id)
    due = datetime.now(UTC) + timedelta(days=svc.settings.deleted_retention_days)
    extra: dict[str, object] = {
        "physical_removal_due": due,
        "crypto_shredded": shredded is not None,
    }
    if shredded is not None:
        extra["exports_deleted"] = shredded
    extra["raw_transcripts_expire_within_h"] = svc.settings.conversations_retention_h
    return ok(Purged.model_validate({**data, **extra}))


@router.post("/switch", response_model=Envelope[Switched])
def switch(body: SwitchRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """Global (no app_id, admin keys only) or per app; takes effect for add and recall at once."""
    if body.app_id is None:
        caller.require_admin("the global switch")
    caller.check_app(body.app_id)
    svc.switches.set(body.user_id, body.app_id, body.enabled, tenant=caller.tenant)
    return ok(Switched(user_id=body.user_id, app_id=body.app_id, enabled=body.enabled))


@router.post("/export", response_model=Envelope[ExportStarted])
async def start_export(body: ExportRequest, svc: ServicesDep, caller: CallerDep) -> Response:
    """The user named by ``user_id`` or ``external_id``; admin keys only."""
    caller.require_admin("export")
    user_id = await users.user_of(svc, caller, body)
    export_id = await asyncio.to_thread(export.start_export, svc, user_id, caller.tenant)
    return ok(ExportStarted(export_id=export_id, status="running"))


@router.get("/export/{export_id}", response_model=Envelope[ExportStatus])
def export_status(
    export_id: str, svc: ServicesDep, caller: CallerDep, link_ttl_s: int = 3600
) -> Response:
    caller.require_admin("export")
    found = export.status(svc, export_id, caller.tenant)
    if found is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"unknown export '{export_id}'")
    link: dict[str, str | int] = {}
    if found["status"] == "done":
        url, expires = export.signed_link(svc, export_id, max(1, min(link_ttl_s, 86400)))
        link = {"url": url, "expires": expires}
    return ok(ExportStatus.model_validate({"export_id": export_id, **found, **link}))


class ExportFile(StreamingResponse):
    """The export's JSONL, one memory or change per line (documented as such in OpenAPI)."""

    media_type = "application/x-ndjson"


@router.get("/export/download/{export_id}", response_model=None, response_class=ExportFile)
def download(export_id: str, expires: int, sig: str, svc: ServicesDep) -> ExportFile:
    """Served to whoever holds a valid link (no API key: the signature is the credential);
    the sealed file is opened on the fly."""
    if not export.link_valid(svc, export_id, expires, sig):
        raise ApiError(ErrorCode.UNAUTHENTICATED, "link expired or signature invalid")
    export.sweep(svc)
    found = export.file_of(svc, export_id)
    if found is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"export '{export_id}' has no file (expired or purged)")
    path, user_id, tenant = found
    return ExportFile(
        export.read_lines(svc, path, user_id, tenant),
        headers={"Content-Disposition": f'attachment; filename="{export_id}.jsonl"'},
    )
