"""``resolve_user`` and purge/export by ``external_id`` through ``memstream.Client`` and
``AsyncClient`` against the real API (docs/api.md#usersresolve); each test runs once
through the sync client and once through the async one (``test_client``'s fixtures)."""

from __future__ import annotations

import uuid

import pytest

from memstream.errors import BadRequest, NotFound
from memstream.schemas.responses import Purged
from tests.integration.test_client import api_url, connect, keys  # noqa: F401  (fixtures)

pytestmark = pytest.mark.integration


def test_resolve_then_export_and_purge_by_external_id(connect, api_url, keys) -> None:  # noqa: F811
    app, admin = connect(api_url, keys.app), connect(api_url, keys.admin)
    ext = f"client-{uuid.uuid4()}"
    user = app.resolve_user(ext)
    assert isinstance(user, int) and user > 0
    assert admin.resolve_user(ext) == user  # the same user for any key of the tenant
    app.add_structured(user, "I grow tomatoes on my balcony", app_id="appA")

    started = admin.export(external_id=ext)
    done = admin.wait_export(started.export_id, timeout_s=60)
    assert done.status == "done" and done.user_id == user
    assert any("tomatoes" in str(line.get("content")) for line in admin.download_export(done.url))

    purged = admin.purge(external_id=ext)
    assert isinstance(purged, Purged) and purged.crypto_shredded and purged.deleted >= 1
    assert app.resolve_user(ext) != user  # the string now names a new user


def test_bad_and_unknown_external_ids(connect, api_url, keys) -> None:  # noqa: F811
    app, admin = connect(api_url, keys.app), connect(api_url, keys.admin)
    with pytest.raises(BadRequest, match="external_id"):
        app.resolve_user("line\nbreak")
    with pytest.raises(BadRequest):
        admin.purge(1, external_id="both")
    with pytest.raises(NotFound):
        admin.export(external_id=f"nobody-{uuid.uuid4()}")


def test_a_lookup_only_resolve_user(connect, api_url, keys) -> None:  # noqa: F811
    app = connect(api_url, keys.app)
    ext = f"client-lookup-{uuid.uuid4()}"
    with pytest.raises(NotFound):
        app.resolve_user(ext, create=False)
    with pytest.raises(NotFound):  # the lookup created nothing
        app.resolve_user(ext, create=False)
    user = app.resolve_user(ext)
    assert app.resolve_user(ext, create=False) == user
