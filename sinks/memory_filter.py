"""Whose memories a query reads: the one ``WHERE`` builder for tenant, user and scope.

Every read of ``memories`` that names a tenant, users or a scope builds those conditions
here (``MemoryStore`` and its lifecycle queries), so the isolation rule — a user's rows are
named by (tenant, user), docs/security.md — is written once. Values never enter the SQL
text: each condition is a ClickHouse ``{name:Type}`` parameter, filled into ``params``.

A scope is the capacity scope of ``core.capacity``: ``""`` for the user's GLOBAL memories
(and app memories without an app), else the app id (``SCOPE_KEY``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from memstream.schemas.tenants import UserKey

# A memory's capacity scope as SQL: "" (GLOBAL) or its app id.
SCOPE_KEY = "if(level = 'GLOBAL' OR ifNull(app_id, '') = '', '', app_id)"

_PARAM = re.compile(r"\{(\w+):")  # the {name:Type} a condition reads

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Rows of ``tenant`` (None: every tenant), of ``users`` (None: every user; sorted),
    in ``scope`` (None: every scope). Build it with :meth:`of`."""

    tenant: str | None = None
    users: tuple[int, ...] | None = None
    scope: str | None = None

    @classmethod
    def of(
        cls,
        tenant: str | None = None,
        users: Iterable[int] | int | None = None,
        scope: str | None = None,
    ) -> MemoryFilter:
        if isinstance(users, int):
            users = (users,)
        return cls(tenant, None if users is None else tuple(sorted(set(users))), scope)

    @property
    def everyone(self) -> bool:
        """No narrowing at all (a system pass over the whole store)."""
        return self.tenant is None and self.users is None and self.scope is None

    def __contains__(self, key: UserKey) -> bool:
        """Is this user one the filter names? (The scope is a row's, not a user's.)"""
        return (self.tenant is None or key.tenant == self.tenant) and (
            self.users is None or key.user_id in self.users
        )

    def where(self, params: dict[str, object], *conditions: str) -> str:
        """``conditions`` and this filter's, joined by AND (``"1"`` when none); the
        filter's values go into ``params`` as ``tenant``, ``user``/``users``, ``scope``."""
        out = list(conditions)
        if self.tenant is not None:
            out.append("tenant_id = {tenant:String}")
            _put(params, "tenant", self.tenant)
        if self.users is not None and len(self.users) == 1:
            out.append("user_id = {user:UInt64}")
            _put(params, "user", self.users[0])
        elif self.users is not None:
            out.append("user_id IN {users:Array(UInt64)}")
            _put(params, "users", list(self.users))
        if self.scope is not None:
            out.append(f"{SCOPE_KEY} = {{scope:String}}")
            _put(params, "scope", self.scope)
        return " AND ".join(out) or "1"


def _put(params: dict[str, object], name: str, value: object) -> None:
    if name in params:  # a caller's own parameter of that name would be overwritten
        raise ValueError(f"query parameter {name!r} is the filter's")
    params[name] = value


@dataclass
class Given:
    """A read's optional conditions: each narrows only when its argument is given (not
    None). A condition reads one ``{name:Type}`` parameter; ``add`` puts the value (as
    ``convert`` makes it) into ``params`` under that name."""

    params: dict[str, object]
    where: list[str] = field(default_factory=list)

    def add(
        self, condition: str, value: T | None, convert: Callable[[T], object] | None = None
    ) -> None:
        if value is None:
            return
        found = _PARAM.search(condition)
        if found is None:
            raise ValueError(f"condition {condition!r} reads no {{name:Type}} parameter")
        self.params[found.group(1)] = value if convert is None else convert(value)
        self.where.append(condition)


def strs(values: Iterable[object]) -> list[str]:
    """An Array(String) parameter of enum members (statuses, op types)."""
    return [str(v) for v in values]
