"""The rule a scoped delete names memories (and fences turns) by (core.delete_scope)."""

from __future__ import annotations

import pickle

from core.delete_scope import DeleteScope, allowed


def test_a_scope_matches_each_field_as_given() -> None:
    app = DeleteScope.of({"scope": {"app_id": "a"}})
    assert app.matches("a", "APP", None) and app.matches("a", "SESSION", "s1")
    assert app.matches("a", "GLOBAL", None)  # a GLOBAL memory said in app a has app_id a
    assert not app.matches("b", "APP", None) and not app.matches(None, "GLOBAL", None)
    level = DeleteScope.of({"scope": {"level": "SESSION"}})
    assert level.matches("a", "SESSION", "s1") and not level.matches("a", "APP", None)
    session = DeleteScope.of({"scope": {"session_id": "s1"}})
    assert session.matches(None, "SESSION", "s1") and not session.matches(None, "SESSION", "s2")
    assert not session.matches(None, "GLOBAL", None)


def test_an_empty_scope_names_everything_and_app_id_none_names_no_app() -> None:
    assert DeleteScope.of({"scope": {}}).matches("x", "APP", None)
    no_app = DeleteScope.of({"scope": {"app_id": None}})
    assert no_app.matches(None, "GLOBAL", None) and not no_app.matches("a", "APP", None)


def test_an_app_keys_access_narrows_the_scope() -> None:
    mine = DeleteScope.of({"scope": {}, "access": {"apps": ["a"], "global": False}})
    assert mine.matches("a", "APP", None)
    assert not mine.matches("b", "APP", None)
    assert not mine.matches("a", "GLOBAL", None)  # GLOBAL needs the grant
    granted = DeleteScope.of({"scope": {}, "access": {"apps": ["a"], "global": True}})
    assert granted.matches(None, "GLOBAL", None)
    assert allowed("APP", "a", None) and not allowed("APP", None, {"apps": ["a"]})


def test_a_scope_is_a_stable_hashable_key() -> None:
    one = DeleteScope.of({"scope": {"app_id": "a"}, "access": {"apps": ["b", "a", "a"]}})
    two = DeleteScope.of({"access": {"apps": ["a", "b"]}, "scope": {"app_id": "a"}})
    assert one == two and hash(one) == hash(two)
    assert pickle.loads(pickle.dumps(one)) == one
