"""Every query the code issues works on both ClickHouse layouts: it names only tables
that both schemas create, under the names both share (never a ``_local`` table), and every
mutation goes through ``layout.mutate`` — on a cluster the local tables ON CLUSTER, as a
Distributed table cannot be mutated."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memstream.schemas.storage import TABLES, clickhouse_ddl
from sinks.clickhouse import ClickHouseStore
from sinks.keyring import KeyRing
from sinks.memory_store import MemoryStore
from tests.helpers.clickhouse_parse import parse_errors

ROOT = Path(__file__).resolve().parents[3]
CODE = ("core", "sinks", "dataflows", "recall_api", "ops", "models", "memstream/schemas")
DB, CLUSTER = "memstream", "prod"
# ``f"... FROM {ch.database}.memories"``, ``{self.db}.memories``, ``{db}.memories``
_TABLE_REF = re.compile(r"\{[A-Za-z_.()]*(?:database|db)\}\.([A-Za-z_][A-Za-z0-9_]*)")
_INSERT = re.compile(r"\.insert\(\s*\"([A-Za-z_][A-Za-z0-9_]*)\"")
_MUTATION = re.compile(r"(?:ALTER TABLE|DELETE FROM|OPTIMIZE TABLE|TRUNCATE TABLE)\s+\{([^}]*)\}")


def _sources() -> dict[Path, str]:
    return {p: p.read_text() for d in CODE for p in sorted((ROOT / d).rglob("*.py"))}


def _created(cluster: str) -> set[str]:
    return {
        m.group(1)
        for s in clickhouse_ddl(DB, cluster)
        if (m := re.match(rf"CREATE TABLE IF NOT EXISTS {DB}\.(\w+)", s))
    }


def test_every_table_a_query_names_exists_in_both_schemas():
    named: dict[str, set[str]] = {}
    for path, text in _sources().items():
        for name in [*_TABLE_REF.findall(text), *_INSERT.findall(text)]:
            named.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    # the scan sees the code's tables (it would pass vacuously if the pattern broke)
    assert {"memories", "memory_changelog", "memory_settings", "data_keys"} <= set(named)
    both = _created("") & _created(CLUSTER)
    assert both == set(TABLES)
    assert set(named) <= both, {n: w for n, w in named.items() if n not in both}
    assert not [n for n in named if n.endswith("_local")]


def test_no_mutation_names_a_table_by_its_query_name():
    """``ALTER TABLE {db}.memories DELETE`` would fail on a cluster (a Distributed table
    has no parts): mutations name ``layout.mutate(...)``, held in a variable. (memstream/schemas/
    renders the DDL, whose ALTERs ``Layout.alter`` sends to both tables on purpose.)"""
    found = []
    for path, text in _sources().items():
        if path.is_relative_to(ROOT / "memstream" / "schemas"):
            continue
        for expr in _MUTATION.findall(text):
            found.append(expr)
            assert not re.search(r"database|\bdb\b|_table\b", expr), (path, expr)
    assert found  # the purge, the change-log blanking and the data-key shredding


class _Recorder(ClickHouseStore):
    """Renders, never runs: what the purge and shred paths send, in either layout."""

    def __init__(self, cluster: str):
        super().__init__("http://clickhouse.invalid:8123", DB, cluster=cluster)
        self.sent: list[str] = []

    def command(self, sql: str, parameters: dict[str, Any] | None = None) -> Any:
        self.sent.append(sql)

    def query(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple]:
        self.sent.append(sql)
        return [(0,)]


def _mutations(cluster: str) -> list[str]:
    ch = _Recorder(cluster)
    MemoryStore(SimpleNamespace(clickhouse=ch), cipher=None)._purge(["m1", "m2"])  # type: ignore[arg-type]
    KeyRing(ch, master=None).destroy(7, "t1")  # type: ignore[arg-type]
    return [s for s in ch.sent if not s.startswith("SELECT")]


@pytest.mark.parametrize("cluster", ["", CLUSTER])
def test_purge_and_shred_mutate_the_tables_that_hold_the_parts(cluster):
    sent = _mutations(cluster)
    if cluster:
        local = f"_local ON CLUSTER {CLUSTER} "
        assert sent == [
            f"DELETE FROM {DB}.memories{local}WHERE memory_id IN {{ids:Array(String)}}",
            f"DELETE FROM {DB}.memory_entities{local}WHERE memory_id IN {{ids:Array(String)}}",
            f"ALTER TABLE {DB}.memory_changelog{local}UPDATE content_before = '', "
            "content_after = '', sanitized = 1 WHERE memory_id IN {ids:Array(String)} "
            "SETTINGS mutations_sync = 2",
            f"ALTER TABLE {DB}.data_keys{local}DELETE WHERE tenant_id = {{t:String}} "
            "AND user_id = {u:UInt64} SETTINGS mutations_sync = 2",
        ]
    else:
        assert [s.split(" WHERE")[0] for s in sent] == [
            f"DELETE FROM {DB}.memories",
            f"DELETE FROM {DB}.memory_entities",
            f"ALTER TABLE {DB}.memory_changelog UPDATE content_before = '', "
            "content_after = '', sanitized = 1",
            f"ALTER TABLE {DB}.data_keys DELETE",
        ]


def test_clickhouse_parses_the_mutations_of_both_layouts():
    assert parse_errors([*_mutations(""), *_mutations(CLUSTER)]) == {}


def test_a_cluster_needs_a_server():
    with pytest.raises(ValueError, match="clickhouse_cluster"):
        ClickHouseStore("chdb:///tmp/x", DB, cluster=CLUSTER)
