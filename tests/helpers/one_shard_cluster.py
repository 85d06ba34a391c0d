"""The cluster layout's queries on a real engine: chDB with a one-shard ``remote_servers``
cluster (``one``, this host), run as ``python -m tests.helpers.one_shard_cluster DIR``.

chDB has no Keeper and no distributed-DDL queue, so ``Replicated*MergeTree`` and ``ON
CLUSTER`` cannot run here. ``OneShardStore`` does what they would do on a cluster of one
host: every statement runs on this host, a replicated engine as its plain one. Everything
else is the cluster layout as memstream renders it: ``<table>_local`` tables, Distributed
tables over them (reads, ``FINAL``, inserts with ``distributed_foreground_insert``),
mutations on the local tables, the v4 → v5 settings rebuild. A shard's is_local address
is served in process, so no server is started. Prints one JSON object of what it saw.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import clickhouse_connect

from sinks.clickhouse import ClickHouseStore
from sinks.keyring import KeyRing
from sinks.memory_store import MemoryStore
from sinks.sql_sessions import SqlSessions

CLUSTER, DB = "one", "memstream"
CONFIG = f"""<clickhouse>
  <tcp_port>9000</tcp_port>
  <remote_servers><{CLUSTER}><shard><internal_replication>true</internal_replication>
    <replica><host>localhost</host><port>9000</port></replica>
  </shard></{CLUSTER}></remote_servers>
</clickhouse>
"""
_REPLICATED = re.compile(
    r"Replicated(\w+)\('/clickhouse/tables/\{shard\}/[^']*', '\{replica\}'(?:, )?"
)


class OneShardStore(ClickHouseStore):
    def __init__(self, directory: Path):
        super().__init__("http://one-shard.invalid:8123", DB, cluster=CLUSTER)
        self._dir = directory
        self.sent: list[str] = []  # as memstream rendered it, before the one-host rewrite
        # No TCP server runs: the one shard must be served in process (its local replica).
        assert self._settings is not None
        self._settings.pop("prefer_localhost_replica")

    def connect(self) -> None:
        conf = self._dir / "config.xml"
        conf.write_text(CONFIG)
        self._client = clickhouse_connect.get_client(
            interface="chdb", path=str(self._dir / "data"), chdb_options={"config-file": str(conf)}
        )

    def _sql_sessions(self, timeout_s: float) -> SqlSessions:
        # no server answers at the URL: analysts' SQL runs on the in-process handle too
        if self._sql is None:
            self._sql = SqlSessions(lambda: self._client, size=1)
        return self._sql

    def command(self, sql: str, parameters: dict[str, Any] | None = None) -> Any:
        self.sent.append(sql)
        one_host = _REPLICATED.sub(r"\1(", sql.replace(f" ON CLUSTER {CLUSTER}", ""))
        return super().command(one_host, parameters)


def main(directory: Path) -> dict[str, Any]:
    ch = OneShardStore(directory)
    seen: dict[str, Any] = {}
    # a v4 store: the switch table keyed by user (no tenant), local + Distributed
    ch.connect()
    ch.command(f"CREATE DATABASE IF NOT EXISTS {DB}")
    ch.command(
        f"CREATE TABLE {DB}.memory_settings_local (user_id UInt64, app_id String, enabled UInt8,"
        " updated_at DateTime64(3, 'UTC'), version UInt64) ENGINE = ReplacingMergeTree(version)"
        " ORDER BY (user_id, app_id)"
    )
    ch.command(
        f"CREATE TABLE {DB}.memory_settings AS {DB}.memory_settings_local "
        f"ENGINE = Distributed({CLUSTER}, {DB}, memory_settings_local, cityHash64(user_id))"
    )
    ch.insert(
        "memory_settings",
        [[42, "*", 0, datetime.now(UTC), 1]],
        ["user_id", "app_id", "enabled", "updated_at", "version"],
    )
    ch.sent.clear()  # from here on, only what memstream sends
    for _ in range(2):  # idempotent: a second start changes nothing
        ch.setup()
    seen["engines"] = dict(
        ch.query("SELECT name, engine FROM system.tables WHERE database = {d:String}", {"d": DB})
    )
    seen["settings"] = ch.query(
        f"SELECT tenant_id, user_id, enabled FROM {DB}.memory_settings FINAL"
    )
    seen["settings_key"] = ch.query(
        "SELECT sorting_key FROM system.tables WHERE database = {d:String} AND name = {t:String}",
        {"d": DB, "t": "memory_settings_local"},
    )[0][0]
    seen["schema_version"] = ch.schema_version()
    seen["query_settings"] = ch.query(
        "SELECT getSetting('load_balancing'), getSetting('distributed_foreground_insert')"
    )

    # two versions of one memory, and another tenant's: FINAL through Distributed
    cols = ["tenant_id", "memory_id", "user_id", "content", "version"]
    ch.insert("memories", [["t1", "m1", 7, "old", 1], ["t2", "m2", 7, "other", 1]], cols)
    ch.insert("memories", [["t1", "m1", 7, "new", 2]], cols)
    seen["final"] = ch.query(
        f"SELECT memory_id, content FROM {DB}.memories FINAL WHERE user_id = 7 ORDER BY 1"
    )
    # an analyst of tenant t1 sees t1's rows, through either name
    seen["readonly_dist"] = ch.query_readonly(f"SELECT memory_id FROM {DB}.memories", tenant="t1")[
        1
    ]
    seen["readonly_local"] = ch.query_readonly(
        f"SELECT DISTINCT memory_id FROM {DB}.memories_local", tenant="t1"
    )[1]

    # purge: lightweight DELETE + change-log blanking, on the local tables
    ch.insert(
        "memory_changelog",
        [["t1", "c1", "m1", 7, "ADD", "", "new", datetime.now(UTC)]],
        [
            "tenant_id",
            "change_id",
            "memory_id",
            "user_id",
            "op_type",
            "content_before",
            "content_after",
            "op_time",
        ],
    )
    MemoryStore(SimpleNamespace(clickhouse=ch), cipher=None)._purge(["m1"])  # type: ignore[arg-type]
    seen["after_purge"] = ch.query(f"SELECT memory_id FROM {DB}.memories ORDER BY 1")
    seen["changelog_after_purge"] = ch.query(
        f"SELECT content_after, sanitized FROM {DB}.memory_changelog FINAL"
    )
    # crypto-shred: a data-key mutation on the local table
    ch.insert(
        "data_keys",
        [
            ["t1", 7, "k1", "w", "m", datetime.now(UTC), 1],
            ["t2", 7, "k2", "w", "m", datetime.now(UTC), 1],
        ],
        ["tenant_id", "user_id", "key_id", "wrapped", "master_id", "created_at", "version"],
    )
    seen["destroyed"] = KeyRing(ch, master=None).destroy(7, "t1")  # type: ignore[arg-type]
    seen["keys_left"] = ch.query(f"SELECT tenant_id, key_id FROM {DB}.data_keys")
    seen["sent"] = ch.sent
    return seen


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1])), default=str))
