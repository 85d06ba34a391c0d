"""Tag filters over the blind index: the Milvus expression asks for tokens, never tags."""

from __future__ import annotations

from core.scope import (
    ScopeRequest,
    Switches,
    TagFilter,
    resolve_scope,
    tag_key_text,
    tag_value_text,
)


def _blind(text: str) -> list[str]:
    return [f"A({text})", f"B({text})"]  # two live keys, in key order


def test_key_only_filter_asks_for_the_key_token_under_every_key() -> None:
    expr = TagFilter.parse("trip").expr(_blind)
    assert (
        expr
        == f'(exists tags["A({tag_key_text("trip")})"] or exists tags["B({tag_key_text("trip")})"])'
    )


def test_value_filter_pairs_key_and_value_tokens_of_the_same_key() -> None:
    expr = TagFilter.parse("city:Oslo").expr(lambda t: [f"K({t})"])
    assert expr == f'tags["K({tag_key_text("city")})"] == "K({tag_value_text("city", "Oslo")})"'


def test_true_matches_the_string_and_the_json_boolean() -> None:
    expr = TagFilter.parse("persona:true").expr(lambda t: [f"K({t})"])
    assert f"K({tag_value_text('persona', 'true')})" in expr
    assert f"K({tag_value_text('persona', True)})" in expr
    assert tag_value_text("persona", "true") != tag_value_text("persona", True)


def test_a_user_without_a_key_matches_nothing_and_no_tag_is_in_the_expression() -> None:
    pred = resolve_scope(ScopeRequest(user_id=7, custom_tags=("secret:zq1",)), Switches())
    assert 'user_id == ""' in pred.milvus_expr(lambda _t: [])
    assert "zq1" not in pred.milvus_expr(lambda t: ["tok"]) and "secret" not in pred.milvus_expr(
        lambda t: ["tok"]
    )
