"""The changes follower leaves the caches alone for an item's change: no cache of the API
holds items (docs/architecture.md#key-value-items), so an agent's puts never make the
user's next recall reload."""

from __future__ import annotations

import json
from typing import Any, cast

from memstream.schemas.tenants import UserKey
from recall_api.changes import ChangesFollower


def test_an_items_change_drops_no_user_and_a_memorys_does() -> None:
    dropped: list[UserKey] = []
    follower = ChangesFollower(cast(Any, None), "me", dropped.append, lambda: None)
    event = {"op": "UPDATE", "user_id": 7, "tenant_id": "default", "origin": "other"}
    follower._apply(json.dumps({**event, "memory_id": "i_0123abcd"}).encode())
    assert dropped == [] and follower.invalidated == 0
    follower._apply(json.dumps({**event, "memory_id": "m_0123abcd"}).encode())
    assert dropped == [UserKey("default", 7)] and follower.invalidated == 1
