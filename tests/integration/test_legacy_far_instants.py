"""Rows an older node stored with an instant no reader can hold (issue 31, B2 legacy).

``expire_at`` of ``9999-12-31T23:59:59-01:00`` is year 10000 in UTC: ClickHouse keeps it,
the driver cannot decode it, and every read of the user answered 500. Such rows are
written here straight through the store layer, as an old node did; list, recall, export
and purge must answer, the row is counted (``memstream_store_rows_undecodable_total``),
and the lifecycle pass runs over it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from prometheus_client import REGISTRY

from dataflows.lifecycle.scan import run_pass
from dataflows.lifecycle.submit import KafkaVia
from memstream.schemas.enums import Status
from memstream.schemas.limits import STORE_TIME_MAX, STORE_TIME_MIN
from tests.helpers.lifecycle import T0, record, seed
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration

YEAR_10000 = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-1)))
YEAR_0 = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))


def _clamped() -> float:
    return (
        REGISTRY.get_sample_value("memstream_store_rows_undecodable_total", {"action": "clamped"})
        or 0.0
    )


def test_a_legacy_row_with_an_unreadable_expire_at_fails_no_read(api, runtime, ingest, user_id):
    far, near, plain = seed(
        runtime,
        record(user_id, "I keep my bike in the garage", expire_at=YEAR_10000),
        record(user_id, "My bike is a blue Brompton", expire_at=YEAR_0),
        record(user_id, "I ride my bike to work"),
    )
    before = _clamped()
    body = {"user_id": user_id}

    stored = {m.memory_id: m for m in runtime.memories.load(user_id, tenant="default")}
    assert stored[far.memory_id].expire_at == STORE_TIME_MAX
    assert stored[near.memory_id].expire_at == STORE_TIME_MIN
    assert stored[plain.memory_id].expire_at is None
    assert _clamped() >= before + 2

    listed = api.post("/memory/v1/user/list", json=body)
    assert listed.status_code == 200, listed.text
    ids = {m["memory_id"] for m in listed.json()["data"]["memories"]["GLOBAL"]}
    assert {far.memory_id, near.memory_id, plain.memory_id} <= ids

    recalled = api.post("/memory/v1/recall", json={**body, "query": "where is my bike?"})
    assert recalled.status_code == 200, recalled.text
    assert far.memory_id in {m["memory_id"] for m in recalled.json()["data"]["memories"]}

    export_id = api.post("/memory/v1/export", json=body).json()["data"]["export_id"]
    done = wait_for(
        lambda: (
            (d := api.get(f"/memory/v1/export/{export_id}").json()["data"])["status"] != "running"
            and d
        ),
        timeout=30,
        what="the export",
    )
    assert done["status"] == "done", done

    # the lifecycle pass reads the rows (the year-0 expiry is due) and does not crash
    summary = run_pass(
        runtime, T0 + timedelta(days=1), KafkaVia(runtime.stores, 30), users=[user_id]
    )
    assert summary["failed_commands"] == 0, summary
    assert runtime.memories.get(user_id, near.memory_id, tenant="default").status is Status.ARCHIVED

    purged = api.post("/memory/v1/purge", json=body)
    assert purged.status_code == 200 and purged.json()["code"] == 0, purged.text
    left = runtime.memories.load(user_id, tenant="default")
    assert {m.memory_id: m.status for m in left} == {
        far.memory_id: Status.DELETED,
        near.memory_id: Status.DELETED,
        plain.memory_id: Status.DELETED,
    }


def test_the_lifecycle_pass_runs_over_a_decayed_legacy_row(runtime, ingest, user_id) -> None:
    (far,) = seed(
        runtime,
        record(user_id, "I once liked jazz", expire_at=YEAR_10000, weight=0.11),
    )
    summary = run_pass(
        runtime, T0 + timedelta(days=400), KafkaVia(runtime.stores, 30), users=[user_id]
    )
    assert summary["failed_commands"] == 0, summary
    got = runtime.memories.get(user_id, far.memory_id, tenant="default")
    assert got.status is Status.ARCHIVED and got.expire_at == STORE_TIME_MAX
    assert datetime.now(UTC) < got.expire_at
