"""``memstream entities backfill`` against the real stack (docs/operations.md#entities-backfill).

Memories stored before entities existed (``entities == []``) are written here straight
to the stores, as an older node did. The command, through a running API and the keyed
writer, links the ACTIVE and ARCHIVED ones whose words name something (one change row
each, ``memory_entities`` rows with the memory's status), leaves a DELETED one and one
that names nothing as they are, and a second run reads none of what the first read
(nor a memory made since entities, which ingest read); ``--rescan`` reads the unlinked
ones again. With no node it says it needs one.
"""

from __future__ import annotations

import argparse
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from core.hashing import content_hash
from core.write_batch import WriteBatch
from memstream.schemas.enums import Level, MemType, OpType, Ownership, Status
from memstream.schemas.memory import ChangeRecord, MemoryRecord
from ops import entities_cmd
from ops.procs import free_port
from tests.helpers.api_server import running_api

pytestmark = pytest.mark.integration

T0 = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)


def _seed(
    runtime,
    tenant: str,
    user_id: int,
    texts: list[tuple[str, Status]],
    start: datetime = T0,
    mem_type: MemType = MemType.SEMANTIC,
) -> list[str]:
    """Old-shaped memories (no links) written as an older node wrote them (``start``: when
    the first was made; T0 is before the test store extracted entities)."""
    recs, changes, vectors = [], [], {}
    for i, (text, status) in enumerate(texts):
        at = start + timedelta(minutes=i)
        mid = f"m_{uuid.uuid4().hex[:24]}"
        recs.append(
            MemoryRecord(
                memory_id=mid,
                user_id=user_id,
                tenant_id=tenant,
                content=text,
                content_hash=content_hash(text),
                level=Level.GLOBAL,
                ownership=Ownership.USER,
                mem_type=mem_type,
                weight=0.8,
                weight_at=at,
                created_at=at,
                updated_at=at,
                valid_at=at,
                status=status,
                archived_at=at if status is Status.ARCHIVED else None,
                deleted_at=at if status is Status.DELETED else None,
            )
        )
        changes.append(
            ChangeRecord(
                change_id=f"c_{uuid.uuid4().hex[:24]}",
                memory_id=mid,
                user_id=user_id,
                tenant_id=tenant,
                op_type=OpType.ADD,
                op_time=at,
                content_after=text,
            )
        )
        vectors[mid] = runtime.embedder.embed([text])[0]
    runtime.memories.write(WriteBatch(memories=recs, vectors=vectors, changes=changes))
    return [r.memory_id for r in recs]


def _table(runtime, user_id: int, tenant: str) -> dict[tuple[str, str], str]:
    db = runtime.stores.clickhouse.database
    rows = runtime.stores.clickhouse.query(
        f"SELECT memory_id, entity_id, status FROM {db}.memory_entities FINAL "
        "WHERE tenant_id = {t:String} AND user_id = {u:UInt64}",
        {"t": tenant, "u": user_id},
    )
    return {(m, e): s for m, e, s in rows}


@pytest.fixture
def node(settings, stores, runtime, ingest):
    """The settings of a CLI that finds a running node on its loopback API."""
    with running_api(settings, stores, runtime) as url:
        port = int(url.rsplit(":", 1)[1])
        yield settings.model_copy(update={"api_host": "127.0.0.1", "api_port": port})


def _run(settings, capsys, **given) -> tuple[int, dict, str]:
    args = argparse.Namespace(
        **{"tenant": None, "user": None, "batch": 2, "timeout": 60.0, **given}
    )
    code = entities_cmd.execute(settings, args)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def test_backfill_links_old_memories_once(node, runtime, capsys, user_id) -> None:
    tenant = f"bf{uuid.uuid4().hex[:10]}"
    other = user_id + 1
    sister, tea, rome, gone = _seed(
        runtime,
        tenant,
        user_id,
        [
            ("My sister Anna lives in Lyon.", Status.ACTIVE),
            ("I like green tea.", Status.ACTIVE),  # names nothing
            ("I visited Rome with my sister.", Status.ARCHIVED),
            ("My friend Tom lives in Oslo.", Status.DELETED),  # not live: left alone
        ],
    )
    (theirs,) = _seed(runtime, tenant, other, [("I met Marco in Milan.", Status.ACTIVE)])
    untouched = _seed(runtime, "default", user_id, [("Lena moved to Vienna.", Status.ACTIVE)])

    code, summary, err = _run(node, capsys, tenant=tenant)
    assert code == 0, err
    assert summary == {"users": 2, "memories_seen": 4, "memories_linked": 3}
    assert "2 users, 4 memories without entities to read" in err

    def links(uid: int, mid: str, t: str = tenant) -> dict[str, str]:
        rec = runtime.memories.get(uid, mid, tenant=t)
        return {x["name"]: x["entity_id"] for x in rec.entities}

    anna = links(user_id, sister)["Anna"]
    assert "Lyon" in links(user_id, sister)
    assert links(user_id, rome)["Anna"] == anna  # "my sister", resolved after "my sister Anna"
    assert runtime.memories.get(user_id, rome, tenant=tenant).status is Status.ARCHIVED
    assert links(user_id, tea) == {} and links(user_id, gone) == {}
    assert set(links(other, theirs)) == {"Marco", "Milan"}
    assert links(user_id, untouched[0], "default") == {}  # another tenant: not asked
    table = _table(runtime, user_id, tenant)
    assert table[(sister, anna)] == "ACTIVE" and table[(rome, anna)] == "ARCHIVED"
    rows, _ = runtime.changelog.query(user_id, tenant=tenant, memory_ids=[sister], limit=10)
    backfilled = [c for c in rows if c.op_type == "UPDATE"]
    assert len(backfilled) == 1 and backfilled[0].op_source == "SYSTEM"

    # a memory made since the store extracts entities was read at ingest: not pending
    (coffee,) = _seed(
        runtime, tenant, user_id, [("I like black coffee.", Status.ACTIVE)], datetime.now(UTC)
    )
    # a second run reads nothing: the memory that names nothing was read by the first
    code, again, err = _run(node, capsys, tenant=tenant)
    assert code == 0, err
    assert again == {"users": 0, "memories_seen": 0, "memories_linked": 0}
    assert "0 users, 0 memories without entities to read" in err
    rows, _ = runtime.changelog.query(user_id, tenant=tenant, memory_ids=[sister], limit=10)
    assert len([c for c in rows if c.op_type == "UPDATE"]) == 1

    # --rescan reads every memory with no links again, and still links nothing new
    code, rescanned, err = _run(node, capsys, tenant=tenant, rescan=True)
    assert code == 0, err
    assert rescanned == {"users": 1, "memories_seen": 2, "memories_linked": 0}
    assert links(user_id, tea) == {} and links(user_id, coffee) == {}


def test_one_user_only(node, runtime, capsys, user_id) -> None:
    mine = _seed(runtime, "default", user_id, [("I flew to Tokyo with Kenji.", Status.ACTIVE)])
    _seed(runtime, "default", user_id + 1, [("I flew to Seoul with Minji.", Status.ACTIVE)])
    # the user's profile is memstream's own derived memory: never the backfill's
    (profile,) = _seed(
        runtime, "default", user_id, [("Kenji lives in Osaka.", Status.ACTIVE)], T0, MemType.PROFILE
    )
    code, summary, err = _run(node, capsys, user=user_id, tenant="default", batch=500)
    assert code == 0, err
    assert summary == {"users": 1, "memories_seen": 1, "memories_linked": 1}
    assert runtime.memories.get(user_id, mine[0], tenant="default").entities
    code, summary, err = _run(node, capsys, user=user_id, tenant="default", rescan=True)
    assert code == 0, err
    assert summary == {"users": 0, "memories_seen": 0, "memories_linked": 0}
    assert not runtime.memories.get(user_id, profile, tenant="default").entities


def test_without_a_node_it_says_it_needs_one(settings, capsys) -> None:
    nowhere = settings.model_copy(update={"api_host": "127.0.0.1", "api_port": free_port()})
    code, summary, err = _run(nowhere, capsys, user=1)
    assert code == 1 and summary == {}
    assert "needs a running node" in err and "memstream up" in err


def test_the_admin_endpoints_refuse_bad_bodies(node, capsys) -> None:
    import httpx

    base = f"http://127.0.0.1:{node.api_port}/admin/v1/entities"
    bad = [
        ("backfill", {}),  # no user
        ("backfill", {"user_id": 1, "batch": 0}),
        ("backfill", {"user_id": 1, "after": "not-a-cursor"}),
        ("backfill", {"user_id": 1, "rescan": "yes"}),
        ("pending", {"tenant": "Bad Tenant!"}),
    ]
    for path, body in bad:
        got = httpx.post(f"{base}/{path}", json=body, timeout=30).json()
        assert got["code"] == 40001, (path, body, got)
