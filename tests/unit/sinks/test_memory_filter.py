"""The one WHERE builder of memories reads: values go into parameters, never the SQL."""

from __future__ import annotations

import pytest

from memstream.schemas.tenants import UserKey
from sinks.memory_filter import SCOPE_KEY, MemoryFilter


def test_no_filter_is_everyone_and_adds_nothing():
    params: dict = {}
    assert MemoryFilter.of().everyone
    assert MemoryFilter.of().where(params) == "1"
    assert MemoryFilter.of().where(params, "status = 'ACTIVE'") == "status = 'ACTIVE'"
    assert params == {}


def test_tenant_users_and_scope_are_parameters():
    hostile = "x' OR 1=1 --"
    params: dict = {}
    sql = MemoryFilter.of(hostile, [3, 1, 3], scope=hostile).where(params, "a = 1")
    assert sql == (
        "a = 1 AND tenant_id = {tenant:String} AND user_id IN {users:Array(UInt64)} "
        f"AND {SCOPE_KEY} = {{scope:String}}"
    )
    assert hostile not in sql
    assert params == {"tenant": hostile, "users": [1, 3], "scope": hostile}


def test_one_user_is_an_equality_and_none_match_no_user():
    params: dict = {}
    assert MemoryFilter.of("t", 7).where(params) == (
        "tenant_id = {tenant:String} AND user_id = {user:UInt64}"
    )
    assert params == {"tenant": "t", "user": 7}
    empty: dict = {}
    assert MemoryFilter.of(users=[]).where(empty) == "user_id IN {users:Array(UInt64)}"
    assert empty == {"users": []}


def test_a_callers_parameter_is_never_overwritten():
    with pytest.raises(ValueError, match="tenant"):
        MemoryFilter.of("t").where({"tenant": "other"})


def test_membership_is_by_tenant_and_user():
    who = MemoryFilter.of("a", [1, 2])
    assert UserKey("a", 1) in who
    assert UserKey("b", 1) not in who
    assert UserKey("a", 3) not in who
    assert UserKey("z", 99) in MemoryFilter.of()
