"""What the API puts on `memory.commands`: each route's payload model, dumped as the JSON
the writer's handlers read back (``recall_api.commands.wire``), with the fingerprint a
resend is recognised by. The literals are what the hand-built payloads carried."""

from __future__ import annotations

from memstream.schemas.payloads import (
    DeletePayload,
    DeleteScopeSpec,
    StructuredFields,
    UpdatePayload,
)
from recall_api.access import Caller
from recall_api.commands import wire
from recall_api.idempotency import fingerprint

APP_KEY = Caller("default", "app", frozenset({"b", "a"}), global_grant=True, kid="k1")


def test_an_app_keys_delete_carries_its_access_by_wire_name() -> None:
    payload = APP_KEY.narrow(DeletePayload(memory_ids=["m_1"]))
    assert wire(payload) == {"memory_ids": ["m_1"], "access": {"apps": ["a", "b"], "global": True}}
    assert DeletePayload.model_validate(wire(payload)) == payload  # what the handler reads


def test_an_admin_or_local_delete_carries_no_access_at_all() -> None:
    for caller in (Caller("default", "admin", kid="k2"), Caller.local()):
        assert wire(caller.narrow(DeletePayload(memory_ids=["m_1"]))) == {"memory_ids": ["m_1"]}


def test_an_update_sends_the_keys_set_and_null_only_to_clear() -> None:
    cleared = UpdatePayload.model_validate({"memory_id": "m_1", "expire_at": None})
    assert wire(cleared) == {"memory_id": "m_1", "expire_at": None}
    assert wire(UpdatePayload(memory_id="m_1", content="x")) == {"memory_id": "m_1", "content": "x"}


def test_a_whole_purge_shreds_and_a_scoped_one_does_not() -> None:
    whole = DeletePayload(scope=DeleteScopeSpec(), reason="purge requested")
    assert wire(whole.model_copy(update={"shred": True})) == {
        "scope": {},
        "reason": "purge requested",
        "shred": True,
    }
    scoped = DeletePayload(scope=DeleteScopeSpec.model_validate({"app_id": "a", "level": "APP"}))
    assert wire(scoped) == {"scope": {"app_id": "a", "level": "APP"}}


def test_the_fingerprint_of_a_payload_is_stable() -> None:
    fields = StructuredFields.model_validate({"content": "hi", "app_id": "a", "is_important": True})
    body = wire(fields)
    assert fingerprint("add_structured", 7, body) == fingerprint("add_structured", 7, dict(body))
    # what the hand-built {"memory_ids": ["m_1"]} hashed to: a resend across the upgrade
    # is still recognised (sorted keys, compact JSON)
    assert fingerprint("delete", 1, wire(DeletePayload(memory_ids=["m_1"]))) == (
        "f7eff46daaeedeb9f793721d1462c86738feb8b1090d7fa264e9bc82678004b0"
    )
