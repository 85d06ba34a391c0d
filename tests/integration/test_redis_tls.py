"""Redis over TLS (Debian's redis-server is built with TLS): the stack serves a
``rediss://`` URL on a TLS-only port; RedisStore trusts the CA named in the URL."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from ops import stack
from ops.procs import free_port
from sinks.redis_store import RedisStore

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tls_redis():
    data_dir = Path(tempfile.mkdtemp(prefix="memstream-redis-tls-"))
    port = free_port()
    try:
        stack.start_redis(data_dir, f"rediss://127.0.0.1:{port}/0")
        yield port, stack.tls_dir(data_dir) / "ca.pem"
    finally:
        stack.stop(data_dir, ("redis",))
        shutil.rmtree(data_dir, ignore_errors=True)


def _store(url: str) -> RedisStore:
    store = RedisStore(url, socket_timeout=2)
    store.setup()
    return store


def test_rediss_url_with_the_ca_works(tls_redis) -> None:
    port, ca = tls_redis
    store = _store(f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={ca}")
    assert store.ping()
    store.client.set("tls-probe", "ok")
    assert store.client.get("tls-probe") == "ok"
    store.close()


def test_untrusted_or_plaintext_clients_are_refused(tls_redis) -> None:
    port, _ = tls_redis
    assert not _store(f"rediss://127.0.0.1:{port}/0").ping()  # the system store lacks our CA
    assert not _store(f"redis://127.0.0.1:{port}/0").ping()  # no plaintext port at all
