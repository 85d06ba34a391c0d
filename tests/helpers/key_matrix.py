"""The key matrix the HTTP tests of the views share: an app-A key, an app-B key, an admin
key and another tenant's admin key, and an API on the session's stack that knows them.

Import the fixtures into a test module (``from tests.helpers.key_matrix import http,
keys``): each module gets its own key file and API (module scope)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sinks import keystore
from tests.helpers.api_client import api_client

NOW = datetime.now(UTC)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """``(key file, {"A", "B", "admin", "T2": key})``."""
    path = tmp_path_factory.mktemp("key-matrix") / "api_keys.json"

    def make(tenant="default", role="app", apps=(), grant=False):
        key, _ = keystore.create(path, tenant, role, list(apps), global_grant=grant, now=NOW)
        return key

    made = {
        "A": make(apps=["appA"]),
        "B": make(apps=["appB"]),
        "admin": make(role="admin"),
        "T2": make(tenant="t2", role="admin"),
    }
    return path, made


@pytest.fixture(scope="module")
def http(settings, stores, runtime, ingest, keys):
    """A test client of an API that reads ``keys``' file, on the session's stack."""
    s = settings.model_copy(update={"api_keys_file": keys[0]})
    with api_client(s, stores, runtime, client=("127.0.0.1", 40000)) as client:
        yield client
