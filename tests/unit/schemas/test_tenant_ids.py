"""Tenant ids and the names scoped by them (memstream.schemas.tenants)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from core.apikeys import new_key
from memstream.schemas.commands import Command
from memstream.schemas.events import ConversationEvent
from memstream.schemas.tenants import DEFAULT_TENANT, check_tenant, id_parts, scoped


@pytest.mark.parametrize("good", ["default", "t1", "acme.eu-west:prod_2", "A" * 64])
def test_valid_tenant_ids(good):
    assert check_tenant(good) == good


@pytest.mark.parametrize("bad", ["", "-x", "a b", "a|b", "a/b", "ü", "A" * 65, "x\n"])
def test_invalid_tenant_ids_are_refused(bad):
    with pytest.raises(ValueError):
        check_tenant(bad)


def test_the_default_tenants_names_and_ids_are_unchanged():
    assert scoped(DEFAULT_TENANT, "task:1") == "task:1"
    assert id_parts(DEFAULT_TENANT, 42, "t") == (42, "t")
    # another tenant's never meet the default's nor each other's ("|" is not in a tenant id)
    assert scoped("t2", "task:1") == "t2|task:1" != scoped("t3", "task:1")
    assert id_parts("t2", 42, "t") != id_parts("t3", 42, "t")


def test_events_and_commands_default_to_the_default_tenant_and_validate_it():
    msgs = [{"role": "user", "content": "hi"}]
    assert ConversationEvent(user_id=1, messages=msgs).tenant_id == DEFAULT_TENANT
    assert ConversationEvent(user_id=1, messages=msgs, tenant_id="t2").tenant_id == "t2"
    with pytest.raises(ValidationError):
        ConversationEvent(user_id=1, messages=msgs, tenant_id="no spaces")
    cmd = Command(op="delete", command_id="r1", user_id=1)
    assert cmd.tenant_id == DEFAULT_TENANT and cmd.result_id == "r1"
    other = Command(op="delete", command_id="r1", user_id=1, tenant_id="t2")
    assert other.result_id == "t2|r1"  # the same request id of two tenants: two results


def test_a_key_of_an_invalid_tenant_cannot_be_made():
    from datetime import UTC, datetime

    with pytest.raises(ValueError):
        new_key("bad tenant", "admin", now=datetime.now(UTC))
    _, rec = new_key("t2", "admin", now=datetime.now(UTC))
    assert rec.tenant == "t2"
