"""memstream.schemas.users: external ids, and bodies that name a user by either id."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memstream.schemas.requests import ExportRequest, PurgeRequest
from memstream.schemas.users import ResolvePayload, ResolveUserRequest


@pytest.mark.parametrize("ext", ["a", "x" * 256, "alice@example.com", "用户 🙂", " spaced "])
def test_an_external_id_is_kept_as_given(ext):
    assert ResolveUserRequest(external_id=ext).external_id == ext


@pytest.mark.parametrize(
    ("ext", "why"),
    [
        ("", "at least 1"),
        ("x" * 257, "at most 256"),
        ("a\nb", "external_id must not contain control characters"),
        ("a\x7fb", "external_id must not contain control characters"),
        ("a\x00b", "NUL"),
        (7, "string"),
    ],
)
def test_a_bad_external_id_is_refused_with_the_reason(ext, why):
    with pytest.raises(ValidationError, match=why):
        ResolveUserRequest(external_id=ext)


@pytest.mark.parametrize("model", [PurgeRequest, ExportRequest])
def test_purge_and_export_name_exactly_one_user(model):
    assert model(user_id=5).user_id == 5
    assert model(external_id="alice").external_id == "alice"
    for both_or_neither in ({"user_id": 5, "external_id": "alice"}, {}):
        with pytest.raises(ValidationError, match="exactly one of user_id and external_id"):
            model(**both_or_neither)


def test_the_command_carries_a_token_never_the_id():
    assert ResolvePayload(lookup="a" * 32).lookup == "a" * 32
    for bad in ("alice", "A" * 32, "a" * 33):
        with pytest.raises(ValidationError):
            ResolvePayload(lookup=bad)
