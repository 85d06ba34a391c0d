"""Scope resolution: errors, examples, and `matches` against a brute-force reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scope_cases import Rec, at, records_near, requests, switches, visible

from core.scope import (
    CrossAppClosed,
    InvalidScope,
    ScopeRequest,
    SwitchedOff,
    Switches,
    TagFilter,
    resolve_scope,
)
from memstream.schemas.enums import Level, MemType, Ownership, Status

ON = Switches()


def rec(level=Level.APP, app="a", session=None, status=Status.ACTIVE, user=1, **kw) -> Rec:
    base = dict(
        ownership=Ownership.USER, mem_type=MemType.SEMANTIC, valid_at=at(0), invalid_at=None
    )
    base.update(kw)
    return Rec(user, app, session, level, status=status, **base)


def test_cross_app_is_refused():
    with pytest.raises(CrossAppClosed) as e:
        resolve_scope(ScopeRequest(user_id=1, cross_app=True), ON)
    assert e.value.code == 40302


def test_master_switch_off_means_nothing():
    with pytest.raises(SwitchedOff) as e:
        resolve_scope(ScopeRequest(user_id=1, app_id="a"), Switches(global_enabled=False))
    assert e.value.code == 40301


def test_switched_off_app_still_recalls_global():
    p = resolve_scope(ScopeRequest(user_id=1, app_id="a"), Switches(disabled_apps=frozenset({"a"})))
    assert p.matches(rec(Level.GLOBAL, app=None))
    assert not p.matches(rec(Level.APP, app="a"))
    assert p.milvus_expr() == (
        'user_id == "1" and tenant_id == "default" and level == "GLOBAL" and status == "ACTIVE" and mem_type != "ITEM" and invalid_at == 0'
    )


def test_only_switched_off_app_requested_matches_nothing():
    p = resolve_scope(
        ScopeRequest(user_id=1, include_global=False, app_id="a"),
        Switches(disabled_apps=frozenset({"a"})),
    )
    assert p.is_empty and not p.matches(rec())
    assert p.milvus_expr() == 'user_id == "1" and tenant_id == "default" and level == ""'


def test_full_expression_encoding():
    req = ScopeRequest(
        user_id=18446744073709551615,
        app_id="a",
        session_id="s1",
        ownership=frozenset({Ownership.USER}),
        mem_type=frozenset({MemType.SEMANTIC, MemType.EPISODIC}),
        custom_tags=("k:v", "persona:true", "z"),
        include_archived=True,
        as_of=at(3),
    )
    ms = 1735689600000 + 3 * 86_400_000
    assert resolve_scope(req, ON).milvus_expr() == (
        'user_id == "18446744073709551615" and tenant_id == "default" and (level == "GLOBAL" or (level == "APP" and '
        'app_id == "a") or (level == "SESSION" and app_id == "a" and session_id == "s1")) '
        'and status in ["ACTIVE", "ARCHIVED", "SUPERSEDED"] and ownership == "USER" '
        'and mem_type in ["EPISODIC", "SEMANTIC"] and mem_type != "ITEM" '
        f"and valid_at <= {ms} and (invalid_at == 0 or invalid_at > {ms}) "
        'and tags["k"] == "v" and (tags["persona"] == "true" or tags["persona"] == true) '
        'and exists tags["z"]'
    )


def test_session_memories_need_the_same_session_and_app():
    p = resolve_scope(ScopeRequest(user_id=1, app_id="a", session_id="s1"), ON)
    assert p.matches(rec(Level.SESSION, app="a", session="s1"))
    assert not p.matches(rec(Level.SESSION, app="a", session="s2"))
    assert not p.matches(rec(Level.SESSION, app="b", session="s1"))
    assert not p.matches(rec(Level.SESSION, app=None, session="s1"))


def test_superseded_only_with_as_of_inside_its_validity():
    old = rec(status=Status.SUPERSEDED, valid_at=at(1), invalid_at=at(5))
    assert not resolve_scope(ScopeRequest(user_id=1, app_id="a"), ON).matches(old)
    assert resolve_scope(ScopeRequest(user_id=1, app_id="a", as_of=at(1)), ON).matches(old)
    assert not resolve_scope(ScopeRequest(user_id=1, app_id="a", as_of=at(5)), ON).matches(old)
    assert not resolve_scope(ScopeRequest(user_id=1, app_id="a", as_of=at(0)), ON).matches(old)


def test_deleted_never_and_archived_only_when_asked():
    req = ScopeRequest(user_id=1, app_id="a", include_archived=True)
    assert not resolve_scope(req, ON).matches(rec(status=Status.DELETED))
    assert resolve_scope(req, ON).matches(rec(status=Status.ARCHIVED))
    assert not resolve_scope(ScopeRequest(user_id=1, app_id="a"), ON).matches(
        rec(status=Status.ARCHIVED)
    )


def test_tag_filters_parse():
    assert TagFilter.parse("k") == TagFilter("k", None)
    assert TagFilter.parse("k:v:w") == TagFilter("k", "v:w")
    assert TagFilter.parse('k:"').expr() == 'tags["k"] == "\\""'
    for bad in ("", ":v", "k\n", "k:a\\b"):
        with pytest.raises(InvalidScope):
            TagFilter.parse(bad)


@settings(max_examples=400, deadline=None)
@given(req=requests, sw=switches, data=st.data())
def test_matches_equals_the_reference_definition(req, sw, data):
    p = resolve_scope(req, sw)
    for r in data.draw(st.lists(records_near(req), max_size=12)):
        assert p.matches(r) == visible(r, req, sw), r


@given(req=requests, sw=switches, data=st.data())
def test_never_another_users_memory(req, sw, data):
    r = data.draw(records_near(req))
    r.user_id = req.user_id + 1
    assert not resolve_scope(req, sw).matches(r)
