"""External user ids in the API (docs/architecture.md#external-user-ids): ``users/resolve``,
and the user a purge or an export names by ``external_id``.

The registry in ClickHouse is the truth; Redis caches a token's user id for a day (a
cache only: lost, it is read again from ClickHouse). A miss in both sends
``resolve_user`` through ``memory.commands`` under the token's route, so the one keyed
writer of that route creates the user once, whichever API process asked
(dataflows/ingest/registry.py).

A purge erases the user's registry rows and their cached entries, and leaves a
tombstone of the user id in Redis for twice the cache's life: an entry cached by a
resolve that read the row just before the purge is never served (it would name a user
that no longer exists). A later resolve of the same external id creates a new user.
"""

from __future__ import annotations

import asyncio

from core.external_ids import route_of
from memstream.schemas.errors import ErrorCode
from memstream.schemas.tenants import scoped
from memstream.schemas.users import ByUser, ResolvedUser, ResolvePayload
from recall_api.access import Caller
from recall_api.commands import run_command
from recall_api.errors import ApiError, is_outage
from sinks.services import Services
from sinks.user_registry import UserRegistry

CACHE_TTL_S = 24 * 3600
GONE_TTL_S = 2 * CACHE_TTL_S


def _cache_key(tenant: str, token: str) -> str:
    return f"extid:{scoped(tenant, token)}"


def _gone_key(tenant: str, user_id: int) -> str:
    return f"extid:gone:{scoped(tenant, str(user_id))}"


def registry_of(svc: Services) -> UserRegistry:
    return UserRegistry(svc.stores.clickhouse, svc.memories.cipher)


async def resolve(svc: Services, caller: Caller, external_id: str) -> ResolvedUser:
    """The user ``external_id`` names in the caller's tenant, created on first use."""
    registry, tenant = registry_of(svc), caller.tenant
    token = await asyncio.to_thread(registry.token, tenant, external_id)
    found = await asyncio.to_thread(_known, svc, registry, tenant, token)
    if found is not None:
        return ResolvedUser(user_id=found, created=False)
    data = await run_command(
        svc,
        "resolve_user",
        route_of(token),
        ResolvePayload(lookup=token),
        tenant=tenant,
        caller=caller,
        endpoint="users/resolve",
    )
    user = ResolvedUser.model_validate(data)
    await asyncio.to_thread(_remember, svc, tenant, token, user.user_id)
    return user


async def existing(svc: Services, caller: Caller, external_id: str) -> int:
    """The user ``external_id`` names, never created: 40401 when none does."""
    registry, tenant = registry_of(svc), caller.tenant
    token = await asyncio.to_thread(registry.token, tenant, external_id)
    found = await asyncio.to_thread(_known, svc, registry, tenant, token)
    if found is None:
        raise ApiError(ErrorCode.NOT_FOUND, "no user has this external_id in this tenant")
    return found


def forget(svc: Services, tenant: str, user_id: int) -> int:
    """A purge's part: the user's registry rows erased, their cache entries dropped and
    the tombstone set (first, so nothing cached meanwhile is served). Returns how many
    external ids mapped to the user."""
    client = svc.stores.redis.client
    client.set(_gone_key(tenant, user_id), "1", ex=GONE_TTL_S)
    tokens = registry_of(svc).forget_user(tenant, user_id)
    if tokens:
        client.delete(*(_cache_key(tenant, t) for t in tokens))
    return len(tokens)


def _known(svc: Services, registry: UserRegistry, tenant: str, token: str) -> int | None:
    """The cached user id of ``token`` unless a purge tombstoned it, else ClickHouse's."""
    client = svc.stores.redis.client
    try:
        cached = client.get(_cache_key(tenant, token))
        if cached is not None and not client.exists(_gone_key(tenant, int(cached))):
            return int(cached)
    except Exception as exc:  # Redis away: the registry still answers
        if not is_outage(exc):
            raise
    found = registry.find(tenant, token)
    if found is not None:
        _remember(svc, tenant, token, found)
    return found


def _remember(svc: Services, tenant: str, token: str, user_id: int) -> None:
    try:
        svc.stores.redis.client.set(_cache_key(tenant, token), str(user_id), ex=CACHE_TTL_S)
    except Exception as exc:  # a cache: the next resolve reads ClickHouse again
        if not is_outage(exc):
            raise


async def user_of(svc: Services, caller: Caller, body: ByUser) -> int:
    """The user a purge or export body names, by ``user_id`` or ``external_id``."""
    if body.user_id is not None:
        return body.user_id
    return await existing(svc, caller, body.external_id or "")
