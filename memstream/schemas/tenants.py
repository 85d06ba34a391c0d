"""Tenants: namespaces of users (docs/security.md#tenants). User 42 of ``t1`` and user 42 of
``t2`` are two people in every store, cache, topic, state, task and export.

A tenant id is 1–64 of ``[A-Za-z0-9_.:-]``, starting with a letter or digit. The tenant
``default`` is the single-tenant deployment: its rows, keys and ids are exactly what
they were before tenants existed (an event or a row without a tenant is ``default``).
Every other tenant's names are scoped: ``scoped(tenant, name)`` prefixes ``<tenant>|``
(``|`` cannot occur in a tenant id, so two tenants' names never meet) — Redis keys,
Bytewax state keys and the result keys of commands are built with it.
"""

from __future__ import annotations

import re
from typing import Annotated, NamedTuple

from pydantic import AfterValidator

DEFAULT_TENANT = "default"
TENANT_MAX_LEN = 64
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


def check_tenant(value: str) -> str:
    """``value`` if it is a valid tenant id, else ValueError (names the rule, not a guess)."""
    if not isinstance(value, str) or not _TENANT.fullmatch(value):
        raise ValueError(
            f"tenant_id must be 1-{TENANT_MAX_LEN} of A-Z a-z 0-9 _ . : - "
            "starting with a letter or digit"
        )
    return value


TenantId = Annotated[str, AfterValidator(check_tenant)]


class UserKey(NamedTuple):
    """One person: a user id inside a tenant (in-process dict keys, batch arguments)."""

    tenant: str
    user_id: int


def scoped(tenant: str, name: str) -> str:
    """``name`` inside ``tenant``'s namespace; the default tenant's names are unchanged."""
    return name if tenant == DEFAULT_TENANT else f"{tenant}|{name}"


def id_parts(tenant: str, *parts: object) -> tuple[object, ...]:
    """The parts of a derived id (``core.hashing.stable_id``): the tenant joins them for
    every tenant but ``default``, whose ids stay what they were."""
    return parts if tenant == DEFAULT_TENANT else (f"tenant={tenant}", *parts)
