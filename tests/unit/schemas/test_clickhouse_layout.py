"""The ClickHouse schema in both layouts (memstream/schemas/ch_layout.py): golden DDL, the shape of
every table on a cluster, idempotency, and that chDB's parser (ClickHouse 26.x) accepts
every statement. No ClickHouse cluster runs here; docs/deploy.md says what was run.

Regenerate the golden files after a deliberate schema change:
``PYTHONPATH=. python -m tests.unit.schemas.test_clickhouse_layout``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memstream.schemas.ch_layout import Layout
from memstream.schemas.storage import (
    TABLES,
    TENANT_COLUMN,
    TENANT_TABLES,
    clickhouse_ddl,
    settings_done,
    settings_rebuild,
)
from tests.helpers.clickhouse_parse import parse_errors

GOLDEN = Path(__file__).parent / "golden"
DB, CLUSTER = "memstream", "prod"
SEP = ";\n\n"


def rendered(cluster: str) -> list[str]:
    """Every schema statement memstream issues: the DDL and the v4 → v5 settings rebuild."""
    return [
        *clickhouse_ddl(DB, cluster),
        *settings_rebuild(DB, cluster),
        *settings_done(DB, cluster),
    ]


def _golden(cluster: str) -> Path:
    return GOLDEN / f"clickhouse_{'cluster' if cluster else 'single'}.sql"


@pytest.mark.parametrize("cluster", ["", CLUSTER])
def test_the_ddl_is_the_golden_one(cluster):
    assert SEP.join(rendered(cluster)) + "\n" == _golden(cluster).read_text()


def test_the_single_node_ddl_is_the_one_before_cluster_mode():
    """Single-node mode is today's schema, byte for byte (the golden file was made from
    the code before the cluster layout existed): no store changes under it."""
    head = _golden("").read_text().split(SEP)[: len(clickhouse_ddl(DB))]
    assert head == clickhouse_ddl(DB)
    assert all("ON CLUSTER" not in s and "Replicated" not in s for s in rendered(""))
    assert not any("Distributed" in s or "_local" in s for s in rendered(""))


def _creates(stmts: list[str]) -> dict[str, str]:
    out = {}
    for s in stmts:
        m = re.match(rf"CREATE TABLE IF NOT EXISTS {DB}\.(\w+)", s)
        if m:
            out[m.group(1)] = s
    return out


@pytest.mark.parametrize("table", TABLES)
def test_each_table_on_a_cluster_is_replicated_locally_and_distributed_by_user(table):
    single = _creates(clickhouse_ddl(DB))[table]
    created = _creates(clickhouse_ddl(DB, CLUSTER))
    local, dist = created[f"{table}_local"], created[table]
    assert f"{DB}.{table}_local ON CLUSTER {CLUSTER} (" in local
    engine = re.search(r"ENGINE = (\w+)(?:\((.*)\))?\n", single)
    assert engine
    path = f"'/clickhouse/tables/{{shard}}/{DB}/{table}', '{{replica}}'"
    args = f"{path}, {engine.group(2)}" if engine.group(2) else path
    assert f"ENGINE = Replicated{engine.group(1)}({args})\n" in local

    # the same columns, keys, partitions and table settings as on one server
    def columns(s: str) -> str:
        return s.split("(", 1)[1].split(") ENGINE")[0]

    def after_engine(s: str) -> str:  # PARTITION BY, ORDER BY, SETTINGS
        return s.split("ENGINE = ", 1)[1].split("\n", 1)[1]

    assert columns(local) == columns(single)
    assert after_engine(local) == after_engine(single)
    key = "user_id" if table in TENANT_TABLES else re.search(r"ORDER BY \(?(\w+)", single).group(1)
    assert dist == (
        f"CREATE TABLE IF NOT EXISTS {DB}.{table} ON CLUSTER {CLUSTER} AS {DB}.{table}_local "
        f"ENGINE = Distributed({CLUSTER}, {DB}, {table}_local, cityHash64({key}))"
    )
    assert re.search(rf"^\s+{key} ", single, re.MULTILINE)  # the key is a column of it
    # the Distributed table comes right after its local table
    stmts = clickhouse_ddl(DB, CLUSTER)
    assert stmts.index(dist) == stmts.index(local) + 1


@pytest.mark.parametrize("cluster", ["", CLUSTER])
def test_every_statement_is_idempotent(cluster):
    for s in rendered(cluster):
        verb = " ".join(s.split()[:2])
        if verb in {"CREATE TABLE", "CREATE DATABASE"}:
            assert s.startswith(f"{verb} IF NOT EXISTS "), s
        elif verb == "DROP TABLE":
            assert s.startswith("DROP TABLE IF EXISTS "), s
        elif verb == "ALTER TABLE":
            assert " ADD COLUMN IF NOT EXISTS " in s, s
        else:  # the rebuild's copy and swap run only while the old table lacks the tenant
            assert verb in {"INSERT INTO", "EXCHANGE TABLES"}, s
            assert s in settings_rebuild(DB, cluster)
        if cluster:
            assert f" ON CLUSTER {CLUSTER}" in s or verb == "INSERT INTO", s


def test_alters_on_a_cluster_go_to_the_local_table_then_the_distributed_one():
    stmts = clickhouse_ddl(DB, CLUSTER)
    alters = [s for s in stmts if s.startswith("ALTER TABLE")]
    assert len(alters) == 2 * len([s for s in clickhouse_ddl(DB) if s.startswith("ALTER")])
    for local, dist in zip(alters[::2], alters[1::2], strict=True):
        table = re.match(rf"ALTER TABLE {DB}\.(\w+)_local ON CLUSTER {CLUSTER} ", local).group(1)
        assert dist == local.replace(f"{table}_local", table, 1)
        assert stmts.index(local) > stmts.index(_creates(stmts)[f"{table}_local"])


def test_the_settings_rebuild_on_a_cluster_keeps_every_row_on_its_shard():
    rebuild = settings_rebuild(DB, CLUSTER)
    tmp = _creates(rebuild)
    assert "cityHash64(user_id)" in tmp["memory_settings_v5"]  # the same key as the old one
    assert TENANT_COLUMN in tmp["memory_settings_v5_local"]
    assert "ORDER BY (tenant_id, user_id, app_id)" in tmp["memory_settings_v5_local"]
    copy = next(s for s in rebuild if s.startswith("INSERT"))
    assert copy.startswith(f"INSERT INTO {DB}.memory_settings_v5 (")  # through Distributed
    assert copy.endswith(f"FROM {DB}.memory_settings")
    assert rebuild[-1] == (
        f"EXCHANGE TABLES {DB}.memory_settings_local AND {DB}.memory_settings_v5_local "
        f"ON CLUSTER {CLUSTER}"
    )
    done = settings_done(DB, CLUSTER)
    assert done[0].startswith(f"ALTER TABLE {DB}.memory_settings ON CLUSTER {CLUSTER} ADD")
    assert all("SYNC" in s for s in done[1:])


def test_the_layout_names_what_queries_and_mutations_use():
    one, many = Layout(DB), Layout(DB, CLUSTER)
    assert one.table("memories") == many.table("memories") == f"{DB}.memories"
    assert one.mutate("memories") == f"{DB}.memories"
    assert many.mutate("memories") == f"{DB}.memories_local ON CLUSTER {CLUSTER}"
    assert many.tables(("memories",)) == ["memories", "memories_local"]
    assert one.tables(("memories",)) == ["memories"]


def test_clickhouse_parses_every_statement_of_both_layouts():
    stmts = [*rendered(""), *rendered(CLUSTER)]
    bad = "CREATE TABLE t ON CLUSTER (x UInt8)"  # the parser does refuse what is wrong
    errors = parse_errors([*stmts, bad])
    assert list(errors) == [bad] and "SYNTAX_ERROR" in errors[bad]


if __name__ == "__main__":
    for c in ("", CLUSTER):
        _golden(c).write_text(SEP.join(rendered(c)) + "\n")
