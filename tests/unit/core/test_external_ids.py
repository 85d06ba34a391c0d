"""core.external_ids: the registry's pure rules (docs/architecture.md#external-user-ids)."""

from __future__ import annotations

import pytest

from core import external_ids
from memstream.schemas.tenants import check_tenant


def test_a_token_routes_to_one_writer_key_always():
    token = "0123456789abcdef0123456789abcdef"
    assert external_ids.route_of(token) == external_ids.route_of(token) == 0x0123456789ABCDE
    assert external_ids.route_of("f" * 32) < 2**60


@pytest.mark.parametrize("bad", ["", "0" * 31, "0" * 33, "G" * 32, "ABCDEF" + "0" * 26])
def test_what_is_no_token_has_no_route(bad):
    with pytest.raises(ValueError, match="32 lowercase hex"):
        external_ids.route_of(bad)


def test_the_lookup_text_keeps_tenant_and_id_apart():
    assert external_ids.lookup_text("a", "b c") != external_ids.lookup_text("a b", "c")
    assert external_ids.lookup_text("t1", "alice") != external_ids.lookup_text("t2", "alice")


def test_new_ids_are_random_positive_and_below_2_63():
    drawn = {external_ids.candidate() for _ in range(1000)}
    assert len(drawn) == 1000
    assert all(0 < i < 2**63 for i in drawn)
    assert max(drawn) > 2**60  # spread over the range, not a counter


def test_the_registry_key_belongs_to_no_tenant():
    with pytest.raises(ValueError):
        check_tenant(external_ids.KEY_TENANT)
