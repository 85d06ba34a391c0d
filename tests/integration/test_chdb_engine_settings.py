"""The embedded engine runs with ENGINE_SERVER_SETTINGS, pools included: chDB sizes its
thread pools once, by the first engine of the process (the one ``import chdb`` starts),
so these only reach the pools through ``sinks.clickhouse._import_chdb``."""

from __future__ import annotations

import threading

import clickhouse_connect
import pytest

from sinks.clickhouse import ENGINE_SERVER_SETTINGS

pytestmark = pytest.mark.integration


def test_the_pools_run_with_the_engine_settings(stores) -> None:
    rows = stores.clickhouse.query(
        "SELECT name, value FROM system.server_settings WHERE name IN {n:Array(String)}",
        {"n": list(ENGINE_SERVER_SETTINGS)},
    )
    # the pools' runtime sizes (max_io_thread_pool_size, ...) as well as the config
    assert {name: int(value) for name, value in rows} == ENGINE_SERVER_SETTINGS


def test_a_burst_of_queries_leaves_no_more_idle_threads_than_the_free_size(
    stores, unique_name
) -> None:
    path = stores.clickhouse.url.removeprefix("chdb://")
    table = f"default.burst_{unique_name}"
    stores.clickhouse.command(f"CREATE TABLE {table} (u UInt64) ENGINE = MergeTree ORDER BY u")
    barrier = threading.Barrier(24)

    def burst(i: int) -> None:  # each thread its own connection, as 24 callers would be
        client = clickhouse_connect.get_client(interface="chdb", path=path)
        barrier.wait()
        for j in range(20):
            client.insert(table, [[i * 1000 + j]], column_names=["u"])
            client.query(f"SELECT count() FROM {table} WHERE u > {j}")

    threads = [threading.Thread(target=burst, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stores.clickhouse.command(f"DROP TABLE {table} SYNC")
    stats = stores.clickhouse.engine_stats()
    idle = stats["GlobalThread"] - stats["GlobalThreadActive"]  # chDB defaults: 133 stayed
    assert idle <= ENGINE_SERVER_SETTINGS["max_thread_pool_free_size"], stats
