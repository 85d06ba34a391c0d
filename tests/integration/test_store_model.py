"""A store remembers its embedding model; another model needs `memstream reembed`.

Against the session's real chDB and Milvus Lite, each test in its own ClickHouse database
and Milvus collection (the session's store is never touched). Model A is the session's
real embedder, model B a tiny deterministic one (tests/helpers/embedders.py). The CLI
runs in-process on the same stores (``reembed_cmd.execute``).
"""

from __future__ import annotations

import argparse
import dataclasses
from datetime import timedelta

import numpy as np
import pytest

from core.write_batch import WriteBatch
from dataflows.runtime import Runtime
from memstream.schemas.enums import Status
from ops import reembed_cmd
from sinks.clickhouse import ClickHouseStore
from sinks.errors import ModelMismatch
from sinks.keyring import KeyRing
from sinks.memory_store import MemoryStore
from sinks.milvus import MilvusStore
from sinks.reembed import collection_dim, plan_reembed, run_reembed
from sinks.services import Services
from sinks.store_model import ModelIdentity, StoreModel
from tests.helpers.embedders import HashedWords
from tests.integration.test_recall_api import NOW, record, seed

pytestmark = pytest.mark.integration


@dataclasses.dataclass
class OwnStore:
    settings: object
    stores: object

    @property
    def memories(self) -> MemoryStore:
        return MemoryStore(
            self.stores, KeyRing.from_settings(self.settings, self.stores.clickhouse)
        )

    @property
    def model(self) -> StoreModel:
        return StoreModel(self.memories)


@pytest.fixture
def own(settings, stores, embedder, unique_name):
    """A store of its own: database and collection named for the test (Kafka and Redis
    are the session's; the users are unique)."""
    s = settings.model_copy(
        update={"clickhouse_database": f"db_{unique_name}", "milvus_collection": f"c_{unique_name}"}
    )
    ch = ClickHouseStore(s.clickhouse_target, s.clickhouse_database)
    mv = MilvusStore(s.milvus_target, s.milvus_collection, embedder.dim)
    ch.setup()
    mv.setup()
    yield OwnStore(s, dataclasses.replace(stores, clickhouse=ch, milvus=mv))
    ch.command(f"DROP DATABASE IF EXISTS {s.clickhouse_database}")
    mv.client.drop_collection(s.milvus_collection)


def every_status(user_id: int) -> list:
    later = NOW + timedelta(days=1)
    return [
        record(user_id, "I am allergic to peanuts"),
        record(user_id, "My sister lives in Berlin", status=Status.ARCHIVED, archived_at=later),
        record(
            user_id,
            "I work at a bakery",
            status=Status.SUPERSEDED,
            invalid_at=later,
            superseded_by="m_newer",
        ),
        record(user_id, "I like jazz", status=Status.DELETED, deleted_at=later),
    ]


def stored_vectors(own: OwnStore, ids: list[str]) -> np.ndarray:
    found = own.memories.vectors(ids)
    return np.stack([found[i] for i in ids])


def test_an_empty_store_records_the_configured_model_and_then_takes_another(own, embedder):
    a = ModelIdentity.of(embedder)
    Runtime.build(own.settings, own.stores, embedder=embedder)
    assert own.model.recorded() == a
    b = HashedWords(embedder.dim)
    Services.build(own.settings, own.stores, embedder=b)  # still empty: B is recorded
    assert own.model.recorded() == ModelIdentity.of(b)


def test_model_b_is_refused_until_reembed_then_every_memory_holds_bs_vectors(
    own, embedder, user_id
):
    rt = Runtime.build(own.settings, own.stores, embedder=embedder)
    memories = seed(rt, *every_status(user_id))
    b = HashedWords(embedder.dim)

    for build in (Runtime.build, Services.build):
        with pytest.raises(ModelMismatch) as refused:
            build(own.settings, own.stores, embedder=b)
        message = str(refused.value)
        assert embedder.name in message and b.name in message
        assert "memstream reembed" in message and "MEMSTREAM_EMBEDDING_MODEL" in message

    plan = plan_reembed(own.memories, b)
    assert plan.recorded == ModelIdentity.of(embedder) and plan.total == 4
    assert plan.statuses == {"ACTIVE": 1, "ARCHIVED": 1, "DELETED": 1, "SUPERSEDED": 1}
    assert run_reembed(own.memories, b, plan, batch_size=3) == 4

    ids = [m.memory_id for m in memories]
    expected = b.embed([m.content for m in memories])
    np.testing.assert_allclose(stored_vectors(own, ids), expected, atol=1e-6)
    scalars = {r["memory_id"]: r["status"] for r in own.stores.milvus.get(ids, ["status"])}
    assert scalars == {m.memory_id: str(m.status) for m in memories}
    assert own.model.recorded() == ModelIdentity.of(b) and own.model.checkpoint() is None
    assert Runtime.build(own.settings, own.stores, embedder=b).embedder is b
    with pytest.raises(ModelMismatch):  # and now A is the other model
        Runtime.build(own.settings, own.stores, embedder=embedder)
    assert plan_reembed(own.memories, b).up_to_date


class Killed(Exception):
    pass


def test_a_stopped_reembed_refuses_every_model_and_resumes_after_its_checkpoint(
    own, embedder, user_id
):
    rt = Runtime.build(own.settings, own.stores, embedder=embedder)
    users = (user_id, user_id + 1)
    memories = seed(
        rt, *[record(u, f"fact number {i} of user {u}") for u in users for i in range(4)]
    )
    in_key_order = sorted(memories, key=lambda m: (m.user_id, m.memory_id))
    b = HashedWords(embedder.dim)
    batches = []

    def killed_after_two(n: int, _cp) -> None:
        batches.append(n)
        if len(batches) == 2:
            raise Killed

    with pytest.raises(Killed):
        run_reembed(own.memories, b, plan_reembed(own.memories, b), 3, killed_after_two)
    cp = own.model.checkpoint()
    assert cp is not None and cp.done == 6 and cp.target == ModelIdentity.of(b)
    assert cp.after == (in_key_order[5].user_id, in_key_order[5].memory_id)
    for model in (embedder, b):  # half one model, half another: nobody starts
        with pytest.raises(ModelMismatch, match="memstream reembed"):
            Runtime.build(own.settings, own.stores, embedder=model)
    first = in_key_order[:6]
    np.testing.assert_allclose(
        stored_vectors(own, [m.memory_id for m in first]),
        b.embed([m.content for m in first]),
        atol=1e-6,
    )
    assert own.model.recorded() == ModelIdentity.of(embedder)  # not yet B
    assert plan_reembed(own.memories, b, restart=True).done == 0  # --restart would redo all

    plan = plan_reembed(own.memories, b)
    assert (plan.done, plan.remaining) == (6, 2)
    resumed: list[int] = []
    assert run_reembed(own.memories, b, plan, 3, lambda n, _cp: resumed.append(n)) == 2
    assert resumed == [2]
    ids = [m.memory_id for m in in_key_order]
    expected = b.embed([m.content for m in in_key_order])
    np.testing.assert_allclose(stored_vectors(own, ids), expected, atol=1e-6)
    assert own.model.recorded() == ModelIdentity.of(b) and own.model.checkpoint() is None
    Runtime.build(own.settings, own.stores, embedder=b)


def test_a_store_from_before_recorded_models_is_identified_by_its_vectors(own, embedder, user_id):
    rt = Runtime.build(own.settings, own.stores, embedder=embedder)
    seed(rt, *every_status(user_id))
    # As a store of schema 2 upgraded by this code: a v2 migration row and no record.
    own.stores.clickhouse.insert("schema_migrations", [[2, NOW]], ["version", "applied_at"])
    own.model.meta.put(f"embedding_model:{own.stores.milvus.collection}", None)

    b = HashedWords(embedder.dim)
    with pytest.raises(ModelMismatch, match="predates recorded models"):
        Runtime.build(own.settings, own.stores, embedder=b)
    assert own.model.recorded() is None  # a guess is never recorded
    Runtime.build(own.settings, own.stores, embedder=embedder)  # A's vectors: adopted
    assert own.model.recorded() == ModelIdentity.of(embedder)


def test_memories_written_around_the_check_on_a_new_store_take_the_configured_model(
    own, embedder, user_id
):
    records = every_status(user_id)  # written by a tool that goes around the check
    vectors = HashedWords(embedder.dim).embed([r.content for r in records])
    own.memories.write(
        WriteBatch(
            memories=records,
            vectors={r.memory_id: v for r, v in zip(records, vectors, strict=True)},
        )
    )
    Runtime.build(own.settings, own.stores, embedder=embedder)
    assert own.model.recorded() == ModelIdentity.of(embedder)


def test_a_model_of_another_dim_gets_the_collection_recreated(own, embedder, user_id):
    rt = Runtime.build(own.settings, own.stores, embedder=embedder)
    memories = seed(rt, *every_status(user_id))
    small = HashedWords(32)
    s32 = own.settings.model_copy(update={"embedding_dim": 32})
    with pytest.raises(ModelMismatch, match="32-d"):
        Runtime.build(s32, own.stores, embedder=small)

    plan = plan_reembed(own.memories, small)
    assert plan.recreate_collection and plan.collection_dim == embedder.dim
    assert run_reembed(own.memories, small, plan) == 4
    assert collection_dim(own.memories) == 32
    ids = [m.memory_id for m in memories]
    expected = small.embed([m.content for m in memories])
    np.testing.assert_allclose(stored_vectors(own, ids), expected, atol=1e-6)
    Runtime.build(s32, own.stores, embedder=small)
    hits = own.stores.milvus.search(
        [expected[0].tolist()], f'user_id == "{user_id}"', 1, ["memory_id"]
    )
    assert hits[0][0]["entity"]["memory_id"] == memories[0].memory_id


def cli_args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"dry_run": False, "restart": False, "batch_size": 2, **kw})


def test_memstream_reembed_dry_run_counts_then_a_run_reembeds_with_a_progress_bar(
    own, embedder, user_id, capsys
):
    rt = Runtime.build(own.settings, own.stores, embedder=embedder)
    memories = seed(rt, *every_status(user_id))
    b = HashedWords(embedder.dim)

    assert reembed_cmd.execute(own.settings, cli_args(dry_run=True), embedder=b) == 0
    out = capsys.readouterr().out
    assert f"recorded model:   {ModelIdentity.of(embedder)}" in out
    assert f"configured model: {ModelIdentity.of(b)}" in out
    assert "memories: 4 (ACTIVE 1, ARCHIVED 1, DELETED 1, SUPERSEDED 1)" in out
    assert "to embed: 4" in out
    assert own.model.recorded() == ModelIdentity.of(embedder)  # a dry run changes nothing
    assert own.model.checkpoint() is None

    assert reembed_cmd.execute(own.settings, cli_args(), embedder=b) == 0
    captured = capsys.readouterr()
    assert "re-embedded 4 memories" in captured.out
    assert "re-embedding" in captured.err and "4/4" in captured.err  # the tqdm bar
    assert own.model.recorded() == ModelIdentity.of(b)
    ids = [m.memory_id for m in memories]
    np.testing.assert_allclose(
        stored_vectors(own, ids), b.embed([m.content for m in memories]), atol=1e-6
    )

    assert reembed_cmd.execute(own.settings, cli_args(), embedder=b) == 0
    assert "nothing to do" in capsys.readouterr().out
