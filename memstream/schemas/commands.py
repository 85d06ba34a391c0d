"""`memory.commands`: management writes applied by the one keyed writer per user.

Versioned (``v``) internal contract. The API produces a command and waits (bounded) for
its result, which the writer pushes to Redis under ``cmdres:<command_id>``.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memstream.schemas.limits import IdText, UserId
from memstream.schemas.payloads import StructuredFields
from memstream.schemas.tenants import DEFAULT_TENANT, TenantId, scoped

COMMAND_VERSION = 1


class _UserBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: UserId


class StructuredMemory(StructuredFields, _UserBody):
    """Body of add_structured (docs/api.md#request-fields): written directly, no extraction
    or evolution; the command carries its fields but ``user_id`` (``memstream.schemas.payloads``)."""


class Command(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    v: int = COMMAND_VERSION
    op: str
    command_id: IdText = Field(min_length=1, max_length=128)
    tenant_id: TenantId = DEFAULT_TENANT  # absent: the default tenant
    user_id: UserId
    payload: dict[str, Any] = Field(default_factory=dict)
    at: datetime | None = None
    # The payload as JSON sealed with the user's data key (sinks.sealed), for commands
    # that carry the user's words (add_structured, update); ``payload`` is then empty.
    sealed: str | None = None

    @classmethod
    def new(cls, op: str, id_prefix: str, user_id: int, payload: BaseModel, tenant: str) -> Command:
        """A command with a unique id (``<prefix>_<hex>``, so results never mix), sent now."""
        return cls(
            op=op,
            command_id=f"{id_prefix}_{uuid.uuid4().hex}",
            tenant_id=tenant,
            user_id=int(user_id),  # a numpy id from a store query is one too (strict field)
            payload=payload.model_dump(mode="json"),
            at=datetime.now(UTC),
        )

    @property
    def result_id(self) -> str:
        """Where its result goes (``result_key``): command ids are the callers' request
        ids, so two tenants may pick the same one."""
        return scoped(self.tenant_id, self.command_id)


def result_key(result_id: str) -> str:
    """The Redis list the writer pushes a command's result to (``Command.result_id``)."""
    return f"cmdres:{result_id}"
