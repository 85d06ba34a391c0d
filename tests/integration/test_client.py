"""``memstream.Client`` and ``memstream.AsyncClient`` against the real API (uvicorn over the
session's Kafka, Redis, chDB and Milvus Lite, the ingest flow applying writes): every
endpoint, the mapping of error codes to exceptions, and retries on 429 — each test runs
once through the sync client and once through the async one."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from memstream import NO_RETRY, AsyncClient, Client, RetryPolicy
from memstream.errors import (
    BadRequest,
    NotFound,
    RateLimited,
    SwitchedOff,
    Unauthenticated,
)
from memstream.schemas.enums import OpType
from memstream.schemas.responses import (
    AddAccepted,
    ChangeLogPage,
    Context,
    Deleted,
    Entities,
    EntityDetail,
    EntityUpdated,
    History,
    Purged,
    RecallResult,
    StructuredAdded,
    TaskStatus,
    UserMemories,
)
from tests.helpers.api_server import make_key, running_api

pytestmark = pytest.mark.integration


class Keys:
    def __init__(self, path):
        self.path = path
        self.app = make_key(path, "app", ("appA",))
        self.admin = make_key(path, "admin")


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> Keys:
    return Keys(tmp_path_factory.mktemp("client-keys") / "api_keys.json")


@pytest.fixture(scope="module")
def api_url(settings, stores, runtime, ingest, keys):
    with running_api(
        settings.model_copy(update={"api_keys_file": keys.path}), stores, runtime
    ) as url:
        yield url


@pytest.fixture(scope="module")
def limited_url(settings, stores, runtime, ingest, keys):
    """Another API process on the same stores: one recall a second per (key, user)."""
    s = settings.model_copy(
        update={"api_keys_file": keys.path, "rate_limit_user_recall": "1/second"}
    )
    with running_api(s, stores, runtime) as url:
        yield url


class Driven:
    """A sync or an async client behind one sync face: on an ``AsyncClient`` each
    method's awaitable is run to its end on the test's loop, so one test body checks both."""

    def __init__(self, client: Client | AsyncClient, loop: asyncio.AbstractEventLoop | None):
        self.client, self.loop = client, loop

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.client, name)
        if self.loop is None or not callable(attr):
            return attr
        return lambda *a, **kw: self.loop.run_until_complete(attr(*a, **kw))


@pytest.fixture(params=["sync", "async"])
def connect(request):
    loop = asyncio.new_event_loop() if request.param == "async" else None
    made: list[Client | AsyncClient] = []

    def make(url: str, key: str | None = None, **kwargs: Any) -> Driven:
        client = (AsyncClient if loop else Client)(url, key, **kwargs)
        made.append(client)
        return Driven(client, loop)

    yield make
    for client in made:
        if loop is None:
            client.close()
        else:
            loop.run_until_complete(client.aclose())
    if loop is not None:
        loop.close()


def test_a_conversation_is_added_then_recalled(connect, api_url, keys, user_id) -> None:
    memory = connect(api_url, keys.app)
    turns = [{"role": "user", "content": "I am allergic to peanuts.", "msg_id": "m1"}]
    added = memory.add(user_id, turns, app_id="appA", request_id=f"r-{user_id}")
    assert isinstance(added, AddAccepted) and added.accepted
    # the same request id is the same task: a resend writes nothing twice
    again = memory.add(user_id, turns, app_id="appA", request_id=f"r-{user_id}")
    assert again.task_id == added.task_id
    task = memory.wait_task(added.task_id, timeout_s=60)
    assert isinstance(task, TaskStatus) and task.status == "done", task
    assert task.counts is not None and task.counts.added >= 1 and task.memory_ids
    assert memory.task(added.task_id).status == "done"
    found = memory.recall(user_id, "what food should I avoid?", app_id="appA")
    assert isinstance(found, RecallResult) and found.hit, found
    first = found.memories[0]
    assert "peanuts" in first.content and first.source.msg_id == "m1"
    assert first.memory_id in task.memory_ids and first.relevance >= 0.3
    budget = memory.recall(user_id, "peanuts", app_id="appA", max_chars=len(first.content))
    assert budget.chars_used == len(first.content) and budget.max_chars == len(first.content)
    assert [m.memory_id for m in budget.memories] == [first.memory_id]


def test_every_management_endpoint(connect, api_url, keys, user_id) -> None:
    app, admin = connect(api_url, keys.app), connect(api_url, keys.admin)
    tea = app.add_structured(user_id, "I like green tea", app_id="appA", custom_tags={"k": "v"})
    cello = app.add_structured(user_id, "I play the cello every Sunday", app_id="appA")
    trip = app.add_structured(
        user_id, "We plan a trip to Kyoto", app_id="appA", level="SESSION", session_id="s1"
    )
    assert isinstance(tea, StructuredAdded) and tea.memory_id.startswith("m")
    assert app.add_structured(user_id, "I like green tea", app_id="appA").memory_id == tea.memory_id

    up = app.update(user_id, tea.memory_id, content="I like jasmine green tea", is_important=True)
    assert up.memory_id == tea.memory_id and "content" in up.updated and up.reembedded
    hist = app.history(user_id, tea.memory_id)
    assert isinstance(hist, History) and hist.memory.content == "I like jasmine green tea"
    assert hist.memory.is_important and hist.memory.custom_tags == {"k": "v"}
    assert {OpType.ADD, OpType.UPDATE} <= {c.op_type for c in hist.changes}
    log = app.change_log(user_id, app_id="appA", op_types=["UPDATE"])
    assert isinstance(log, ChangeLogPage) and log.total >= 1
    assert {c.op_type for c in log.items} == {OpType.UPDATE}

    listed = app.user_list(user_id)
    assert isinstance(listed, UserMemories) and listed.total == 3
    assert [m.memory_id for m in listed.memories.SESSION["s1"]] == [trip.memory_id]
    assert {m.memory_id for m in listed.memories.APP["appA"]} == {tea.memory_id, cello.memory_id}

    closed = app.session_close(user_id, "s1", app_id="appA", promote_ids=[trip.memory_id])
    assert closed.promoted, closed
    assert app.recall(user_id, "Kyoto trip", app_id="appA").hit

    gone = app.delete(user_id, cello.memory_id)
    assert isinstance(gone, Deleted) and gone.deleted == 1 and gone.memory_ids == [cello.memory_id]
    found = app.recall(user_id, "cello on Sunday", app_id="appA", min_relevance=0)
    assert cello.memory_id not in {m.memory_id for m in found.memories}
    batch = app.batch_delete(user_id, memory_ids=[tea.memory_id])
    assert batch.deleted == 1

    assert app.switch(user_id, False, app_id="appA").enabled is False
    assert app.switch(user_id, True, app_id="appA").enabled is True

    started = admin.export(user_id)
    done = admin.wait_export(started.export_id, timeout_s=60)
    assert done.status == "done" and done.url, done
    lines = admin.download_export(done.url)
    assert {"memory", "change"} <= {line["type"] for line in lines}
    assert admin.export_status(started.export_id).status == "done"

    purged = admin.purge(user_id)
    assert isinstance(purged, Purged) and purged.crypto_shredded and purged.deleted >= 1
    assert app.user_list(user_id).total == 0


def test_errors_are_exceptions_with_the_api_code(connect, api_url, keys, user_id) -> None:
    app = connect(api_url, keys.app)
    with pytest.raises(NotFound) as missing:
        app.history(user_id, "m_missing")
    assert missing.value.code == 40401 and missing.value.http_status == 404
    assert missing.value.trace_id
    with pytest.raises(NotFound) as write:
        app.delete(user_id, "m_missing", request_id=f"del-{user_id}")
    assert write.value.request_id == f"del-{user_id}"  # the key to resend the write with
    with pytest.raises(NotFound):
        app.task("t_unknown")
    with pytest.raises(BadRequest) as bad:
        app.recall(user_id, "tea", top_k=0)
    assert bad.value.code == 40001 and "top_k" in bad.value.msg
    with pytest.raises(BadRequest):
        app.update(user_id, "m_x")  # nothing to update
    with pytest.raises(Unauthenticated) as anon:
        connect(api_url, "msk_not_a_key").recall(user_id, "tea")
    assert anon.value.code == 40101
    with pytest.raises(Unauthenticated):
        app.purge(user_id)  # an app key may not purge
    app.switch(user_id, False, app_id="appA")
    with pytest.raises(SwitchedOff) as off:
        app.add_structured(user_id, "I like chess", app_id="appA")
    assert off.value.code == 40301


def test_entities_and_an_entity(connect, api_url, keys, user_id) -> None:
    app = connect(api_url, keys.app)
    lyon = app.add_structured(user_id, "My sister Anna lives in Lyon.", app_id="appA")
    chess = app.add_structured(user_id, "Every Sunday Anna plays chess with me.", app_id="appA")
    page = app.entities(user_id, app_id="appA")
    assert isinstance(page, Entities) and [e.name for e in page.entities] == ["Anna", "Lyon"]
    assert page.entities[0].memories == 2 and page.total == 2
    assert [e.name for e in app.entities(user_id, type="place").entities] == ["Lyon"]
    assert app.entities(user_id, app_id="appA", include_global=False).total == 2
    anna = app.entity(user_id, name="anna")
    assert isinstance(anna, EntityDetail) and anna.entity == page.entities[0]
    assert [m.memory_id for m in anna.memories] == [lyon.memory_id, chess.memory_id]
    assert anna.entities is None and anna.summary
    by_id = app.entity(user_id, entity_id=anna.entity.entity_id, max_chars=500)
    assert by_id.entity == anna.entity
    with pytest.raises(NotFound):
        app.entity(user_id, name="Bob")
    with pytest.raises(BadRequest):
        app.entity(user_id)  # neither a name nor an id
    with pytest.raises(Unauthenticated):
        app.entities(user_id, app_id="appB")  # not this key's app


def test_update_entity(connect, api_url, keys, user_id) -> None:
    app = connect(api_url, keys.app)
    lyon = app.add_structured(user_id, "My sister Anna lives in Lyon.", app_id="appA")
    chess = app.add_structured(user_id, "Every Sunday Anna plays chess with me.", app_id="appA")
    anna = app.entity(user_id, name="Anna").entity
    renamed = app.update_entity(user_id, anna.entity_id, "rename", name="Anna Smith")
    assert isinstance(renamed, EntityUpdated) and renamed.entity_id == anna.entity_id
    assert renamed.name == "Anna Smith" and renamed.memories_changed == 2
    assert app.entity(user_id, name="anna").entity.name == "Anna Smith"  # the alias finds it
    split = app.update_entity(user_id, anna.entity_id, "split", memory_ids=[chess.memory_id])
    assert split.entity_id != anna.entity_id and split.memory_ids == [chess.memory_id]
    lyon_place = next(e for e in app.entities(user_id).entities if e.name == "Lyon")
    with pytest.raises(BadRequest):  # merge into itself
        app.update_entity(user_id, lyon_place.entity_id, "merge", into=lyon_place.entity_id)
    merged = app.update_entity(user_id, split.entity_id, "merge", into=anna.entity_id)
    assert merged.entity_id == anna.entity_id and merged.memory_ids == [chess.memory_id]
    detail = app.entity(user_id, entity_id=anna.entity_id)
    assert [m.memory_id for m in detail.memories] == [lyon.memory_id, chess.memory_id]
    with pytest.raises(NotFound):
        app.update_entity(user_id, "e_nobody", "rename", name="X")
    with pytest.raises(BadRequest):
        app.update_entity(user_id, anna.entity_id, "split")  # no memory_ids


def test_a_context_for_an_agents_turn(connect, api_url, keys, user_id) -> None:
    app = connect(api_url, keys.app)
    lyon = app.add_structured(user_id, "My sister Anna lives in Lyon.", app_id="appA")
    tea = app.add_structured(user_id, "I drink green tea every morning.", app_id="appA")
    chat = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Where does Anna live?", "name": "Lin"},
        {"role": "tool", "content": "{}"},  # left out by the client
    ]
    got = app.context(user_id, messages=chat, app_id="appA", max_chars=500)
    assert isinstance(got, Context) and got.chars_used == len(got.text) <= 500
    cited = {m for i in got.items for m in i.memory_ids}
    assert {lyon.memory_id, tea.memory_id} <= cited and "Anna" in got.text
    small = app.context(user_id, query="tea", app_id="appA", max_chars=60, count_hit=False)
    assert 0 < small.chars_used <= 60
    assert app.context(user_id).items == []  # the GLOBAL scope: none of them
    with pytest.raises(BadRequest):
        app.context(user_id, max_chars=0)
    with pytest.raises(Unauthenticated):
        app.context(user_id, query="tea", app_id="appB")  # not this key's app


def _retries(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "memstream.client"]


def test_a_rate_limited_call_waits_and_succeeds(connect, limited_url, keys, user_id, caplog):
    caplog.set_level(logging.INFO, logger="memstream.client")
    memory = connect(limited_url, keys.app)
    # three recalls at once: two of them share a one-second window, so one is refused
    answers = [memory.recall(user_id, "tea", app_id="appA") for _ in range(3)]
    assert all(isinstance(a, RecallResult) for a in answers)
    assert any("after 42910" in line for line in _retries(caplog)), _retries(caplog)


def test_a_rate_limited_call_gives_up_after_its_budget(
    connect, limited_url, keys, user_id, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="memstream.client")
    for policy in (RetryPolicy(budget_s=0.5), NO_RETRY):
        memory = connect(limited_url, keys.app, retry=policy)
        with pytest.raises(RateLimited) as limited:  # Retry-After (≥ 1 s) is past the budget
            for _ in range(3):
                memory.recall(user_id, "tea", app_id="appA")
        assert limited.value.code == 42910 and limited.value.http_status == 429
        assert limited.value.retry_after is not None and limited.value.retry_after >= 1
    assert _retries(caplog) == []  # it gave up without sleeping short of Retry-After
