"""The routing key ``X-Memstream-User``: the request's user, where a load balancer can hash
it without reading the body (README "Replicas: routing by user").

Any API process answers any user correctly (one it does not hold loads from the user's
Redis snapshot), so routing decides where a user is *cached*, not whether the answer is
right: hashed consistently on this header, N replicas each hold their share of the users
instead of N copies of the same ones.

The header is optional (absent or empty: nothing is checked). When given on a request
whose body names a ``user_id``, it must be that id as its decimal string, the form the
balancer hashes (``007`` would hash elsewhere than ``7``). Another value is refused with
40001: the request would be cached by a replica that does not own its user, a second copy
that only costs memory, and no balancer can see the mismatch in the body. Requests that
name no user in their body (``GET tasks/{id}``, the export status and download) ignore it.
"""

from __future__ import annotations

from memstream.schemas.errors import ErrorCode
from recall_api.errors import ApiError

ROUTE_HEADER = "x-memstream-user"


def check_route(header: str | None, body_user: int | None) -> None:
    """40001 when the routing header names another user than the body."""
    if not header or body_user is None or header == str(body_user):
        return
    shown = header if len(header) <= 40 else header[:40] + "…"
    raise ApiError(
        ErrorCode.BAD_PARAMETER,
        f"the {ROUTE_HEADER} header ({shown!r}) must be the body's user_id as a decimal "
        f"string ('{body_user}'), or be left out",
    )
