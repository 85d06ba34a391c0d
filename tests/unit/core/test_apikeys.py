"""API keys: the format, hashing, constant-time lookup, revocation, the legacy setting."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.apikeys import KeyRing, check_name, digest, kid_of, legacy_ring, new_key, revoked

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def test_a_new_key_is_printed_once_and_stored_only_as_its_digest():
    key, rec = new_key("default", "app", ["appA"], now=NOW)
    assert key.startswith(f"msk_{rec.kid}_") and len(key) > 40
    assert rec.digest == digest(key) and key not in repr(rec.to_json())
    assert rec.to_json()["digest"].startswith("sha256:") and "digest" not in rec.public()


def test_verify_finds_the_record_and_refuses_a_changed_or_revoked_key():
    key, rec = new_key("default", "app", ["appA"], now=NOW)
    ring = KeyRing({rec.kid: rec})
    assert ring.verify(key) == rec
    assert ring.verify(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert ring.verify("msk_00000000_" + "x" * 43) is None and ring.verify("") is None
    assert KeyRing({rec.kid: revoked(rec, NOW)}).verify(key) is None


@pytest.mark.parametrize(
    ("role", "apps", "grant", "error"),
    [
        ("app", [], False, "needs --apps"),
        ("admin", ["a"], False, "whole tenant"),
        ("admin", [], True, "whole tenant"),
        ("root", [], False, "role must be"),
        ("app", ["bad app"], False, "no spaces"),
    ],
)
def test_invalid_keys_are_refused(role, apps, grant, error):
    with pytest.raises(ValueError, match=error):
        new_key("default", role, apps, global_grant=grant, now=NOW)


def test_a_name_with_a_trailing_newline_is_refused():
    assert check_name("app", "appA") == "appA"
    for name in ("appA\n", "appA\r\n", "\nappA"):  # `$` of a match let "appA\n" through
        with pytest.raises(ValueError, match="no spaces"):
            check_name("app", name)
    with pytest.raises(ValueError, match="no spaces"):
        new_key("default", "app", ["appA\n"], now=NOW)


def test_kid_of_parses_only_well_formed_keys():
    key, rec = new_key("t1", "admin", now=NOW)
    assert kid_of(key) == rec.kid and kid_of("Bearer x") is None


def test_the_legacy_setting_is_hashed_and_old_entries_without_apps_are_admin():
    ring = KeyRing(
        {}, legacy_ring({"plain-key": {"tenant": "t"}, digest("k2"): {"app_ids": ["a"]}})
    )
    admin, app = ring.verify("plain-key"), ring.verify("k2")
    assert admin.role == "admin" and admin.tenant == "t"
    assert app.role == "app" and app.apps == {"a"} and app.tenant == "default"
    assert all("plain-key" not in r.digest for r in ring.legacy.values())
