"""``clickhouse_cluster``: empty is the single-node schema; a name must be a ClickHouse
identifier (it is written into DDL unquoted) and needs a ClickHouse server URL."""

from __future__ import annotations

import os

import pytest

from core.settings import SettingsError, load_settings
from sinks.stores import Stores


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for key in list(os.environ):
        if key.startswith("MEMSTREAM_"):
            monkeypatch.delenv(key)
    return monkeypatch


def test_the_default_is_one_server(clean_env):
    s = load_settings()
    assert s.clickhouse_cluster == ""
    assert Stores.from_settings(s).clickhouse.layout.clustered is False


def test_a_cluster_name_from_the_environment_reaches_the_store(clean_env):
    clean_env.setenv("MEMSTREAM_CLICKHOUSE_URL", "http://ch1:8123")
    clean_env.setenv("MEMSTREAM_CLICKHOUSE_CLUSTER", "memstream_prod")
    s = load_settings()
    layout = Stores.from_settings(s).clickhouse.layout
    assert (layout.cluster, layout.db) == ("memstream_prod", "memstream")
    assert layout.mutate("memories") == "memstream.memories_local ON CLUSTER memstream_prod"


@pytest.mark.parametrize("bad", ["prod cluster", "1prod", "prod;DROP", "'prod'", "pröd"])
def test_a_name_that_is_not_an_identifier_is_refused(clean_env, bad):
    with pytest.raises(SettingsError, match=r"clickhouse_cluster \(MEMSTREAM_CLICKHOUSE_CLUSTER\)"):
        load_settings(clickhouse_url="http://ch1:8123", clickhouse_cluster=bad)


@pytest.mark.parametrize("url", ["", "chdb:///tmp/ch"])
def test_a_cluster_on_chdb_is_refused(clean_env, url):
    with pytest.raises(SettingsError, match="clickhouse_cluster: needs a server clickhouse_url"):
        load_settings(clickhouse_url=url, clickhouse_cluster="prod")
