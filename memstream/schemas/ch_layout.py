"""Where each ClickHouse table lives: one server (or chDB), or a cluster.

``Layout(db)`` is today's single-node schema: ``db.memories`` is a ``ReplacingMergeTree``
and every statement names it. ``Layout(db, cluster)`` is the same schema on a ClickHouse
cluster (``remote_servers`` names ``cluster``; Keeper and the ``{shard}`` / ``{replica}``
macros are configured):

- ``db.<table>_local`` — ``Replicated<engine>('/clickhouse/tables/{shard}/<db>/<table>',
  '{replica}', …)`` on every host, made ``ON CLUSTER``;
- ``db.<table>`` — ``Distributed(cluster, db, <table>_local, <sharding key>)``: the name
  every query, read and insert uses, so **the code issues the same queries in both
  modes**;
- mutations (``ALTER … UPDATE/DELETE``, lightweight ``DELETE``) and ``ALTER … ADD
  COLUMN`` go to the local tables ``ON CLUSTER`` (a Distributed table has no parts to
  mutate); ``ADD COLUMN`` goes to the Distributed table too, so it shows the column.

Sharding key: ``cityHash64(user_id)`` for every per-user table. Every row of a user
(memories, change log, switches, data keys) lands on one shard, so a memory, all its
versions and its replacement share a shard and a per-shard ``FINAL`` (what ``SELECT …
FROM <Distributed> FINAL`` runs) collapses them correctly; a user's reads touch one
shard (``optimize_skip_unused_shards`` can prune the rest). The hash, not ``user_id``
itself: ``user_id % shards`` follows the ids' structure (ids issued in steps, or with
low bits fixed, pile onto a few shards), while ``cityHash64`` — a fixed, documented
function, equal on every host and version — spreads any id set evenly. Tables without a
user (``store_meta``, ``schema_migrations``) are sharded by a hash of their replacing
key for the same reason: one key's versions share a shard.
"""

from __future__ import annotations

from dataclasses import dataclass

# Settings of every query, insert and command memstream sends to a cluster, so that a
# write is readable as soon as it returns, as on one server (memstream reads right after
# it writes: a data key just made, a memory just stored):
# - distributed_foreground_insert: an insert into a Distributed table returns once the
#   shards have the rows, not when they are queued on the initiator (ClickHouse ≥ 23.10;
#   ``insert_distributed_sync`` before);
# - load_balancing = in_order, prefer_localhost_replica = 0: every memstream process,
#   whichever host it connects to, writes to and reads from the same replica of a shard
#   (the first healthy one of ``remote_servers``), so a read never meets a replica that
#   has not fetched the part yet while that replica is up; the others take over when it
#   is down (then a read may briefly miss the last writes). Mutations wait for every
#   replica themselves (``mutations_sync = 2``; lightweight DELETE by default).
CLUSTER_SETTINGS = {
    "distributed_foreground_insert": 1,
    "load_balancing": "in_order",
    "prefer_localhost_replica": 0,
}


@dataclass(frozen=True)
class Table:
    """One table, described once for both layouts."""

    name: str
    body: str  # the column list, as written between the parentheses
    engine: str  # e.g. "ReplacingMergeTree"
    engine_args: str  # e.g. "version" ("" = none)
    tail: str  # PARTITION BY / ORDER BY / SETTINGS
    shard_by: str  # the Distributed sharding key on a cluster


@dataclass(frozen=True)
class Layout:
    db: str
    cluster: str = ""  # "" = one server (chDB or a ClickHouse server)

    @property
    def clustered(self) -> bool:
        return bool(self.cluster)

    @property
    def on_cluster(self) -> str:
        return f" ON CLUSTER {self.cluster}" if self.cluster else ""

    def table(self, name: str) -> str:
        """What queries read and insert into (the Distributed table on a cluster)."""
        return f"{self.db}.{name}"

    def local_name(self, name: str) -> str:
        """The table that holds the parts: ``<name>_local`` on a cluster."""
        return f"{name}_local" if self.cluster else name

    def local(self, name: str) -> str:
        return f"{self.db}.{self.local_name(name)}"

    def mutate(self, name: str) -> str:
        """The target of a mutation or a lightweight DELETE: ``db.t`` on one server,
        ``db.t_local ON CLUSTER c`` on a cluster (``ALTER TABLE {mutate} DELETE …``)."""
        return f"{self.local(name)}{self.on_cluster}"

    def create_database(self) -> str:
        return f"CREATE DATABASE IF NOT EXISTS {self.db}{self.on_cluster}"

    def create(self, t: Table) -> list[str]:
        """``CREATE TABLE IF NOT EXISTS`` of ``t``: one statement, or local + Distributed."""
        if not self.cluster:
            engine = f"{t.engine}({t.engine_args})" if t.engine_args else t.engine
            return [
                f"CREATE TABLE IF NOT EXISTS {self.db}.{t.name} ({t.body}) "
                f"ENGINE = {engine}\n        {t.tail}"
            ]
        path = f"'/clickhouse/tables/{{shard}}/{self.db}/{t.name}', '{{replica}}'"
        args = f"{path}, {t.engine_args}" if t.engine_args else path
        local = self.local_name(t.name)
        return [
            f"CREATE TABLE IF NOT EXISTS {self.db}.{local}{self.on_cluster} ({t.body}) "
            f"ENGINE = Replicated{t.engine}({args})\n        {t.tail}",
            f"CREATE TABLE IF NOT EXISTS {self.db}.{t.name}{self.on_cluster} "
            f"AS {self.db}.{local} "
            f"ENGINE = Distributed({self.cluster}, {self.db}, {local}, {t.shard_by})",
        ]

    def alter(self, name: str, clause: str) -> list[str]:
        """A schema ALTER (``ADD COLUMN IF NOT EXISTS …``): the local table first, then,
        on a cluster, the Distributed one, so both show the same columns."""
        out = [f"ALTER TABLE {self.mutate(name)} {clause}"]
        if self.cluster:
            out.append(f"ALTER TABLE {self.db}.{name}{self.on_cluster} {clause}")
        return out

    def drop(self, name: str) -> list[str]:
        """``DROP TABLE IF EXISTS``: on a cluster the Distributed table, then the local
        one ``SYNC`` (its Keeper path is free at once, so the name can be made again)."""
        if not self.cluster:
            return [f"DROP TABLE IF EXISTS {self.db}.{name}"]
        return [
            f"DROP TABLE IF EXISTS {self.db}.{name}{self.on_cluster} SYNC",
            f"DROP TABLE IF EXISTS {self.local(name)}{self.on_cluster} SYNC",
        ]

    def tables(self, names: tuple[str, ...]) -> list[str]:
        """Every table the layout creates for ``names`` (without the database)."""
        return [n for name in names for n in dict.fromkeys((name, self.local_name(name)))]
