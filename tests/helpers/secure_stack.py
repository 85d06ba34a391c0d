"""A broker of its own with SASL/SCRAM over TLS, started by ops.stack (the option
``memstream up`` takes from the settings), and an HTTPS API served as the node does."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from pydantic import SecretStr

from ops import stack
from ops.procs import free_port
from ops.tls import issue_server_cert

USER = "memstream"


@contextmanager
def secure_kafka(
    data_dir: Path,
    protocol: str = "SASL_SSL",
    mechanism: str = "SCRAM-SHA-512",
    authorizer: bool = True,
) -> Iterator[dict[str, Any]]:
    """Start the broker secured (ACLs enforced; memstream's user is super); yield the
    settings (as an update) that reach it."""
    password = secrets.token_urlsafe(16)
    bootstrap = f"127.0.0.1:{free_port()}"
    security = stack.KafkaSecurity(protocol, mechanism, USER, password, authorizer)
    try:
        stack.start_kafka(
            data_dir, bootstrap, partitions=1, controller_port=free_port(), security=security
        )
        yield {
            "kafka_bootstrap": bootstrap,
            "kafka_partitions": 1,
            "kafka_topic_prefix": "",
            "kafka_security_protocol": protocol,
            "kafka_sasl_mechanism": mechanism,
            "kafka_sasl_username": USER,
            "kafka_sasl_password": SecretStr(password),
            "kafka_ssl_ca_file": str(stack.tls_dir(data_dir) / "ca.pem"),
        }
    finally:
        stack.stop(data_dir, ("kafka",))


def api_tls_files(data_dir: Path) -> dict[str, Any]:
    """A certificate for the API on 127.0.0.1, from the same local CA."""
    cert = issue_server_cert(stack.tls_dir(data_dir), "api", ["127.0.0.1"])
    return {"api_tls_cert_file": str(cert.cert), "api_tls_key_file": str(cert.key)}


@contextmanager
def serving(config: uvicorn.Config) -> Iterator[uvicorn.Server]:
    """Run uvicorn in a thread until the block ends."""
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="https-api", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(10)
