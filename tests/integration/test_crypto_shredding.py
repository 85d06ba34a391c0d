"""Crypto-shredding: after a purge, no copy of the user's words opens, wherever it lies.

Markers come in through add (a turn, its msg_id), add_structured (content, a
custom_tags value) and update; an export is made and a Bytewax flow with a recovery
store snapshots a window of the user. Before the purge each place holds sealed copies
that open (so the test can see them); after it, the raw bytes of the ClickHouse and
Milvus Lite data dirs, the Redis dump, the topics' records, the recovery sqlite files
and a copy of the export file hold no marker, and no blob in them opens with any key
the system holds (a fresh KeyRing from the same settings, or the old single key).
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from bytewax.connectors.kafka import KafkaSourceMessage
from bytewax.testing import TestingSource
from confluent_kafka import Consumer, TopicPartition

from core.derived import is_profile_id, profile_id
from memstream.schemas.events import TOPIC_COMMANDS, TOPIC_CONVERSATIONS, TOPIC_DLQ
from memstream.schemas.tenants import DEFAULT_TENANT
from recall_api.state import api_state
from sinks.crypto import DecryptionError
from sinks.keyring import KeyRing
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration
BLOB = re.compile(rb"v2:[0-9a-f]{16}:[A-Za-z0-9+/=]{16,}")


def _files(root: Path) -> bytes:
    """Every file's bytes under ``root``; parts that ClickHouse merges away while we walk
    (a directory gone between listing and reading) are skipped, not an error."""
    out = []
    for folder, _dirs, names in os.walk(root):  # os.walk ignores a vanished directory
        for name in names:
            try:
                out.append((Path(folder) / name).read_bytes())
            except OSError:
                continue
    return b"\n".join(out)


def _records(bootstrap: str, topic: str, key: bytes) -> bytes:
    """Every record of ``topic`` under ``key``, raw values joined (assign, from 0)."""
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "shred-test", "enable.auto.commit": False}
    )
    try:
        parts = c.list_topics(topic, timeout=10).topics[topic].partitions
        tps = []
        for p in parts:
            _, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high > 0:
                tps.append((p, high))
        c.assign([TopicPartition(topic, p, 0) for p, _ in tps])
        left = {p: high for p, high in tps}
        values = []
        deadline = time.monotonic() + 20
        while left and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None or msg.error():
                continue
            if msg.key() == key:
                values.append(msg.value() or b"")
            if msg.offset() + 1 >= left.get(msg.partition(), 0):
                left.pop(msg.partition(), None)
        return b"\n".join(values)
    finally:
        c.close()


def _opened(keys: KeyRing, user_id: int, raw: bytes) -> list[str]:
    """The plaintext of every blob in ``raw`` that opens for ``user_id`` (nested ones too)."""
    out = []
    for m in BLOB.findall(raw):
        try:
            text = keys.decrypt(user_id, m.decode())
        except (DecryptionError, ValueError):
            continue
        out.append(text)
        try:  # a sealed window/item: base64 of a pickle
            out.append(repr(pickle.loads(base64.b64decode(text, validate=True))))
        except Exception:
            pass
    return out


def _has(texts: list[str], marker: str) -> bool:
    return any(marker in t for t in texts)


def _snapshot_flow(runtime, data_dir: Path, user_id: int, marker: str) -> None:
    """A window of the user through a flow with a recovery store (raw platform event)."""
    from dataflows.ingest.flow import build_flow
    from dataflows.runner import FlowThread

    topic = runtime.stores.kafka.topic(TOPIC_CONVERSATIONS)
    event = {"user_id": user_id, "messages": [{"role": "user", "content": f"I keep {marker} safe"}]}
    msg = KafkaSourceMessage(
        str(user_id).encode(), json.dumps(event).encode(), topic=topic, partition=0, offset=0
    )
    thread = FlowThread(
        "shred-snap",
        lambda: build_flow(runtime, source=TestingSource([msg]), flow_id="shred-snap"),
        data_dir=data_dir,
        epoch_s=0.2,
        stop=threading.Event(),
    )
    thread.start()
    thread.join(60)
    assert not thread.is_alive()


def test_purge_leaves_no_copy_that_opens(api, runtime, ingest, settings, stores, user_id, tmp_path):
    tag = f"zqtag{user_id}"
    said, msg_id = f"zqadd{user_id}", f"zqmsg{user_id}"
    structured, updated = f"zqstruct{user_id}", f"zqupd{user_id}"
    snap = f"zqsnap{user_id}"
    markers = [tag, said, msg_id, structured, updated, snap]
    keys: KeyRing = runtime.memories.cipher

    task = api.post(
        "/memory/v1/add",
        json={
            "user_id": user_id,
            "messages": [{"role": "user", "content": f"My codeword is {said}", "msg_id": msg_id}],
        },
    ).json()["data"]["task_id"]
    wait_for(
        lambda: api.get(f"/memory/v1/tasks/{task}").json()["data"]["status"] == "done",
        what="the add",
    )
    body = {"user_id": user_id, "content": f"I park at {structured}", "custom_tags": {"t": tag}}
    mid = api.post("/memory/v1/add_structured", json=body).json()["data"]["memory_id"]
    up = api.post(
        "/memory/v1/update",
        json={"user_id": user_id, "memory_id": mid, "content": f"I park at {updated}"},
    ).json()
    assert up["code"] == 0, up
    hit = api.post(
        "/memory/v1/recall",
        json={
            "user_id": user_id,
            "query": "park",
            "min_relevance": 0,
            "include_archived": True,
            "filter": {"custom_tags": [f"t:{tag}"]},
        },
    ).json()["data"]["memories"]
    assert [m["memory_id"] for m in hit] == [mid]  # the blind index finds the tag (cold path)
    export_id = api.post("/memory/v1/export", json={"user_id": user_id}).json()["data"]["export_id"]
    st = wait_for(
        lambda: (
            (d := api.get(f"/memory/v1/export/{export_id}").json()["data"])["status"] == "done"
            and d
        ),
        what="the export",
    )
    assert updated in api.get(st["url"]).text
    export_files = list((settings.data_path / "exports").rglob(f"{export_id}*"))
    assert len(export_files) == 1
    backup = tmp_path / "export-backup"
    shutil.copy(export_files[0], backup)
    _snapshot_flow(runtime, tmp_path, user_id, snap)
    recovery = tmp_path / "recovery" / "shred-snap"
    db = stores.clickhouse.database
    wrapped = [
        w
        for (w,) in stores.clickhouse.query(
            f"SELECT wrapped FROM {db}.data_keys WHERE user_id = {{u:UInt64}}", {"u": user_id}
        )
    ]
    assert wrapped

    bootstrap, key = settings.kafka_bootstrap, str(user_id).encode()
    places = {
        "conversations": lambda: _records(bootstrap, stores.kafka.topic(TOPIC_CONVERSATIONS), key),
        "commands": lambda: _records(bootstrap, stores.kafka.topic(TOPIC_COMMANDS), key),
        "dlq": lambda: _records(bootstrap, stores.kafka.topic(TOPIC_DLQ), key),
        "recovery": lambda: _files(recovery),
        "export": lambda: backup.read_bytes(),
    }
    before = {name: read() for name, read in places.items()}
    for name, raw in before.items():
        assert not any(m.encode() in raw for m in markers), f"plaintext in {name}"
    assert _has(_opened(keys, user_id, before["conversations"]), said)
    opened_cmds = _opened(keys, user_id, before["commands"])
    assert _has(opened_cmds, structured) and _has(opened_cmds, updated) and _has(opened_cmds, tag)
    assert _has(_opened(keys, user_id, before["recovery"]), snap)
    assert _has(_opened(keys, user_id, before["export"]), updated)

    gone = api.post(
        "/memory/v1/add_structured", json={"user_id": user_id, "content": "I once had a boat"}
    ).json()["data"]["memory_id"]
    assert (
        api.post("/memory/v1/delete", json={"user_id": user_id, "memory_id": gone}).json()["code"]
        == 0
    )  # a deleted memory keeps its vector (restore) until the purge
    ids = [
        i
        for (i,) in stores.clickhouse.query(
            f"SELECT DISTINCT memory_id FROM {db}.memories WHERE user_id = {{u:UInt64}}",
            {"u": user_id},
        )
    ]
    # The stored profile has a row but never a vector (docs/architecture.md#the-profile).
    pid = profile_id(DEFAULT_TENANT, user_id, None)
    assert pid in ids and stores.milvus.get([pid], ["memory_id"]) == []
    ids = [i for i in ids if not is_profile_id(i)]
    assert {mid, gone} <= set(ids) and len(stores.milvus.get(ids, ["memory_id"])) == len(ids)

    purge = api.post("/memory/v1/purge", json={"user_id": user_id}).json()
    assert purge["code"] == 0 and purge["data"]["crypto_shredded"], purge
    # the vectors, a readable likeness of the words, are gone when the purge answers
    assert stores.milvus.get(ids, ["memory_id"]) == []
    assert not export_files[0].exists()
    assert api.get(st["url"]).json()["code"] == 40401  # the link no longer serves anything

    ch_dir, milvus_dir = settings.data_path / "clickhouse", Path(settings.milvus_target).parent
    redis = stores.redis.client
    redis.save()
    rdb = Path(redis.config_get("dir")["dir"]) / redis.config_get("dbfilename")["dbfilename"]
    # The wrapped key rows leave the disk too (outdated parts are cleaned within seconds).
    wait_for(
        lambda: not any(w.encode() in _files(ch_dir) for w in wrapped),
        timeout=60,
        interval=1,
        what="the wrapped data key to leave the ClickHouse files",
    )
    after = {name: read() for name, read in places.items() if name != "export"}
    after |= {
        "export": backup.read_bytes(),
        "clickhouse": _files(ch_dir),
        "milvus": _files(milvus_dir),
        "redis": rdb.read_bytes()
        + b"".join(repr(redis.dump(k)).encode() for k in redis.scan_iter(count=1000)),
    }
    fresh = KeyRing.from_settings(settings, stores.clickhouse)  # what any process would hold
    for name, raw in after.items():
        for m in markers:
            assert m.encode() not in raw, f"{m} readable in {name}"
        for ring in (keys, fresh):
            assert _opened(ring, user_id, raw) == [], f"a sealed copy in {name} still opens"
    rows = stores.clickhouse.query(
        f"SELECT content, custom_tags FROM {db}.memories WHERE user_id = {{u:UInt64}}",
        {"u": user_id},
    )
    # Rows the physical purge has not reached yet (it runs after the shredding, and may
    # already be done: then the raw-bytes check above is what covers their parts).
    sealed = [c for row in rows for c in row if c]
    assert all(c.startswith("v2:") for c in sealed)
    for blob in sealed:
        with pytest.raises(DecryptionError):
            fresh.decrypt(user_id, blob)
        with pytest.raises(DecryptionError):
            fresh.legacy.decrypt(blob)


def test_export_file_is_sealed_and_deleted_when_its_link_expires(api, ingest, user_id):
    from recall_api import export

    svc = api_state(api.app).services
    body = {"user_id": user_id, "content": f"zqexp{user_id} is my locker"}
    assert api.post("/memory/v1/add_structured", json=body).json()["code"] == 0
    export_id = api.post("/memory/v1/export", json={"user_id": user_id}).json()["data"]["export_id"]
    st = wait_for(
        lambda: (
            (d := api.get(f"/memory/v1/export/{export_id}").json()["data"])["status"] == "done"
            and d
        ),
        what="the export",
    )
    path, _, _ = export.file_of(svc, export_id)
    assert f"zqexp{user_id}".encode() not in path.read_bytes()  # sealed at rest
    assert f"zqexp{user_id}" in api.get(st["url"]).text  # opened on download
    long = api.get(f"/memory/v1/export/{export_id}", params={"link_ttl_s": 86400}).json()["data"]
    assert long["expires"] <= export.expires_at(path)  # no link outlives the file
    export.sweep(svc, now=export.expires_at(path) - 1)  # older exports of other tests may go
    assert path.exists()
    assert export.sweep(svc, now=export.expires_at(path) + 1) >= 1
    assert not path.exists()
    assert api.get(st["url"]).json()["code"] == 40401


def test_plaintext_topics_expire_within_the_purge_deadline(settings, stores):
    from confluent_kafka.admin import ConfigResource, ResourceType

    from sinks.topic_config import worst_case_lifetime_ms

    stores.kafka.ensure_topics()  # corrects existing topics too
    deadline = int(settings.conversations_retention_h * 3600 * 1000)
    for base in (TOPIC_CONVERSATIONS, TOPIC_DLQ):
        res = ConfigResource(ResourceType.TOPIC, stores.kafka.topic(base))
        found = stores.kafka.admin.describe_configs([res])[res].result(10)
        config = {k: found[k].value for k in ("segment.ms", "retention.ms", "file.delete.delay.ms")}
        assert worst_case_lifetime_ms(config) <= deadline, (base, config)
