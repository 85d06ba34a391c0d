"""The cluster layout on a real engine: chDB with a one-shard cluster of this host
(tests/helpers/one_shard_cluster.py, in a process of its own — chDB keeps one data
directory per process). Replication and ON CLUSTER are not exercised (no Keeper); the
Distributed tables, the queries through them and the local-table mutations are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.helpers.one_shard_cluster",
            str(tmp_path_factory.mktemp("c")),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_setup_makes_local_tables_and_distributed_ones_under_the_query_names(seen):
    from memstream.schemas.storage import SCHEMA_VERSION, TABLES

    assert seen["engines"] == {
        **{t: "Distributed" for t in TABLES},
        **{f"{t}_local": "ReplacingMergeTree" for t in TABLES},
    }
    assert seen["schema_version"] == SCHEMA_VERSION
    # every call carries the read-your-writes settings (memstream/schemas/ch_layout.CLUSTER_SETTINGS)
    assert seen["query_settings"] == [["in_order", True]]
    ddl = [s for s in seen["sent"] if s.startswith(("CREATE", "ALTER", "DROP", "EXCHANGE"))]
    assert ddl and all(" ON CLUSTER one" in s for s in ddl)  # rendered for the cluster


def test_the_v4_settings_table_is_rebuilt_through_distributed(seen):
    assert seen["settings"] == [["default", 42, 0]]
    assert seen["settings_key"] == "tenant_id, user_id, app_id"
    assert any(
        s.startswith("EXCHANGE TABLES memstream.memory_settings_local") for s in seen["sent"]
    )


def test_final_through_distributed_keeps_the_latest_version(seen):
    assert seen["final"] == [["m1", "new"], ["m2", "other"]]


def test_a_tenants_analyst_sees_its_rows_through_both_names(seen):
    assert {r[0] for r in seen["readonly_dist"]} == {"m1"}
    assert seen["readonly_local"] == [["m1"]]


def test_purge_and_shred_mutate_the_local_tables(seen):
    assert seen["after_purge"] == [["m2"]]
    assert seen["changelog_after_purge"] == [["", 1]]
    assert seen["destroyed"] == 1 and seen["keys_left"] == [["t2", "k2"]]
    mutations = [
        s for s in seen["sent"] if s.startswith(("DELETE", "ALTER TABLE")) and "WHERE" in s
    ]
    assert len(mutations) == 4  # memories, memory_entities, the change log, data_keys
    assert all("_local ON CLUSTER one " in s for s in mutations)
