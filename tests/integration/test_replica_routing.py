"""Replicas that add capacity: two API processes' worth of apps (each its own Services,
hot cache and recaller, as ``python -m recall_api.main`` builds them) served by uvicorn
over the same real stores, behind a router that hashes ``X-Memstream-User`` as an
ingress does. Each replica caches a distinct share of the users; a request sent to the
replica that does not own its user is answered the same, from a load of the user's
Redis snapshot. And the header itself: optional, refused when it names another user."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from memstream.schemas.tenants import DEFAULT_TENANT
from ops.procs import free_port
from recall_api.app import create_app
from recall_api.routing import ROUTE_HEADER
from recall_api.serving import server_config
from sinks.services import Services
from tests.helpers.lifecycle import record, seed

pytestmark = pytest.mark.integration
URL = "/memory/v1/recall"
QUERY = "what food allergies do I have?"
USERS = 24


class HashRouter(httpx.BaseTransport):
    """The ingress of the test: rendezvous hashing of the routing header over the
    replicas (consistent: a replica added takes ~1/N of the users, the rest stay)."""

    def __init__(self, replicas: dict[str, str]) -> None:
        self.replicas = replicas  # name -> base URL
        self._http = httpx.HTTPTransport()

    def owner(self, key: str) -> str:
        return max(
            self.replicas, key=lambda name: hashlib.sha256(f"{name}|{key}".encode()).digest()
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        base = httpx.URL(self.replicas[self.owner(request.headers.get(ROUTE_HEADER, ""))])
        request.url = request.url.copy_with(scheme=base.scheme, host=base.host, port=base.port)
        return self._http.handle_request(request)

    def close(self) -> None:
        self._http.close()


class Replica:
    """One API process: its own Services (memory store view, hot cache), served by uvicorn."""

    def __init__(self, name: str, settings, stores, embedder) -> None:
        self.name = name
        self.services = Services.build(settings, stores, embedder=embedder)
        port = free_port()
        app = create_app(settings, stores, self.services)
        self.server = uvicorn.Server(
            server_config(app, settings, host="127.0.0.1", port=port, lifespan="off")
        )
        self.url = f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(target=self.server.run, name=f"api-{name}", daemon=True)

    def __enter__(self) -> Replica:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, f"replica {self.name} did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *_exc) -> None:
        self.server.should_exit = True
        self._thread.join(10)

    @property
    def cache(self):
        return self.services.cache

    def holds(self, user_id: int) -> bool:
        return self.cache.peek(user_id, tenant=DEFAULT_TENANT) is not None


@pytest.fixture(scope="module")
def replicas(settings, stores, embedder) -> Iterator[dict[str, Replica]]:
    with (
        Replica("a", settings, stores, embedder) as a,
        Replica("b", settings, stores, embedder) as b,
    ):
        yield {"a": a, "b": b}


@pytest.fixture(scope="module")
def users(runtime) -> list[int]:
    base = random.getrandbits(40) << 20
    ids = [base + i for i in range(USERS)]
    texts = ("I am allergic to peanuts", "My sister lives in Berlin")
    seed(runtime, *(record(u, t) for u in ids for t in texts))
    return ids


def recall(http: httpx.Client, user_id: int, **headers: str) -> dict:
    resp = http.post(
        URL, json={"user_id": user_id, "query": QUERY, "timeout_ms": 10_000}, headers=headers
    )
    answer = resp.json()
    assert answer["code"] == 0, answer
    return answer["data"]


def assert_same(got: dict, want: dict) -> None:
    """The same memories in the same order at the same relevance (the weight-free part
    of the score; up to 1e-5: BLAS may sum another matrix layout in another order)."""
    assert [m["memory_id"] for m in got["memories"]] == [m["memory_id"] for m in want["memories"]]
    relevance = [m["relevance"] for m in got["memories"]]
    assert relevance == pytest.approx([m["relevance"] for m in want["memories"]], abs=1e-5)


def test_each_replica_caches_its_share_and_a_non_owner_answers_the_same(replicas, users):
    router = HashRouter({name: r.url for name, r in replicas.items()})
    owner = {u: router.owner(str(u)) for u in users}
    answers = {}
    with httpx.Client(transport=router, base_url="http://ingress", timeout=30) as http:
        for u in users:
            answers[u] = recall(http, u, **{ROUTE_HEADER: str(u)})
            assert answers[u]["hit"] and "peanuts" in answers[u]["memories"][0]["content"]
        held = {name: {u for u in users if r.holds(u)} for name, r in replicas.items()}
        # each replica holds exactly the users it owns: disjoint shares, all users held
        for name in replicas:
            assert held[name] == {u for u in users if owner[u] == name}
            assert held[name], "24 users, two replicas: each owns some"
        assert held["a"].isdisjoint(held["b"]) and held["a"] | held["b"] == set(users)

        # asked again through the router, every user is a cache hit on its owner
        misses = {name: r.cache.misses for name, r in replicas.items()}
        hits = {name: r.cache.hits for name, r in replicas.items()}
        for u in users:
            assert_same(recall(http, u, **{ROUTE_HEADER: str(u)}), answers[u])
        for name, r in replicas.items():
            assert r.cache.misses == misses[name]
            assert r.cache.hits - hits[name] == len(held[name])

    # straight to the replica that does not own the user (a client without the header
    # behind a balancer, or a user just moved by a scale-up): the same answer, from one
    # load of the user's Redis snapshot (the owner saved it when it loaded the user)
    strays = [next(u for u in users if owner[u] == name) for name in replicas]
    for u in strays:
        other = replicas["b" if owner[u] == "a" else "a"]
        loads = other.cache.snapshot_loads
        with httpx.Client(base_url=other.url, timeout=30) as direct:
            assert_same(recall(direct, u), answers[u])
        assert other.holds(u) and other.cache.snapshot_loads == loads + 1
        assert replicas[owner[u]].holds(u)


def test_the_routing_header_is_optional_and_must_name_the_body_user(api, users):
    u = users[0]
    assert recall(api, u)["hit"]  # no header: answered
    assert recall(api, u, **{ROUTE_HEADER: ""})["hit"]  # empty: as if absent
    assert recall(api, u, **{ROUTE_HEADER: str(u)})["hit"]
    for wrong in (str(u + 1), f"0{u}", "alice"):
        answer = api.post(
            URL, json={"user_id": u, "query": QUERY}, headers={ROUTE_HEADER: wrong}
        ).json()
        assert answer["code"] == 40001 and ROUTE_HEADER in answer["msg"], answer
    # a write is checked the same way, before anything is accepted
    answer = api.post(
        "/memory/v1/add_structured",
        json={"user_id": u, "content": "I like tea"},
        headers={ROUTE_HEADER: str(u + 1)},
    ).json()
    assert answer["code"] == 40001, answer
    # an endpoint whose body names no user ignores it
    answer = api.get("/memory/v1/tasks/t_unknown", headers={ROUTE_HEADER: "alice"}).json()
    assert answer["code"] == 40401, answer
    # and the header is in the OpenAPI of every per-user endpoint
    spec = api.get("/openapi.json").json()
    for path in ("/memory/v1/recall", "/memory/v1/add", "/memory/v1/session/close"):
        params = spec["paths"][path]["post"].get("parameters", [])
        assert any(p["name"] == ROUTE_HEADER and p["in"] == "header" for p in params), path
