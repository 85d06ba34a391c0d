"""External user ids (docs/api.md#usersresolve): the shapes of ``users/resolve``, of its
command, and the rule that purge and export name their user by either id.

An external id is the caller's own string for a user (an email, a UUID, a framework's
``"{user_id}"``); ``users/resolve`` maps it to memstream's uint64 ``user_id`` within the
caller's tenant, creating the user on first use (docs/architecture.md#external-user-ids).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    StrictBool,
    StringConstraints,
    model_validator,
)

from memstream.schemas.limits import UserId, check_id_text

MAX_EXTERNAL_ID = 256


def _external_id(value: str) -> str:
    return check_id_text(value, "external_id")


# Exactly as the caller spells it (no trimming, no case folding): "Alice" and "alice " are
# two users. Text without control characters, 1..256 characters.
ExternalId = Annotated[
    str,
    StringConstraints(strict=True, min_length=1, max_length=MAX_EXTERNAL_ID),
    AfterValidator(_external_id),
]


class ResolveUserRequest(BaseModel):
    """``create`` false: a lookup only, an unknown external id is 40401 and creates
    nothing (a read path: the cache and the registry, no command)."""

    model_config = ConfigDict(extra="forbid")

    external_id: ExternalId
    create: StrictBool = True


class ResolvedUser(BaseModel):
    """``users/resolve``'s answer: ``created`` is true for the one call that made the user."""

    user_id: UserId
    created: StrictBool


class ResolvePayload(BaseModel):
    """The ``resolve_user`` command's payload: the external id's registry token (never the
    id itself), sent under the writer key the token routes to (``core.external_ids``)."""

    model_config = ConfigDict(extra="forbid")

    lookup: Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9a-f]{32}$")]


class ByUser(BaseModel):
    """A body that names one user by ``user_id`` or by ``external_id``, exactly one (both or
    neither: 40001). An unknown external id is 40401 and creates nothing."""

    model_config = ConfigDict(extra="forbid")

    user_id: UserId | None = None
    external_id: ExternalId | None = None

    @model_validator(mode="after")
    def _one_id(self) -> ByUser:
        if (self.user_id is None) == (self.external_id is None):
            raise ValueError("give exactly one of user_id and external_id")
        return self
