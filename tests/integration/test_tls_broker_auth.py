"""TLS and broker auth end to end: add → recall through a SASL/SCRAM-over-TLS broker and
an HTTPS API; a wrong SCRAM password and a plaintext client are refused; with ACLs, a
platform's principal may write memory.conversations but not memory.commands."""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path

import httpx
import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from dataflows.ingest.flow import build_flow
from dataflows.runner import FlowThread
from dataflows.runtime import Runtime
from memstream.schemas.events import TOPIC_COMMANDS, TOPIC_CONVERSATIONS
from ops.procs import free_port
from recall_api.app import create_app
from recall_api.serving import api_base_url, server_config
from sinks.kafka import KafkaBus
from sinks.kafka_config import kafka_client_config
from sinks.services import Services
from sinks.stores import Stores
from tests.helpers.secure_stack import api_tls_files, secure_kafka, serving
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secure(settings):
    """Settings for a SASL_SSL broker of this module's own and an HTTPS API."""
    data_dir = Path(tempfile.mkdtemp(prefix="memstream-tls-"))
    with secure_kafka(data_dir) as kafka:
        yield settings.model_copy(
            update={**kafka, **api_tls_files(data_dir), "api_port": free_port()}
        )


def _refusal(conf: dict) -> list[KafkaError]:
    errors: list[KafkaError] = []
    client = AdminClient({**conf, "error_cb": errors.append, "log_level": 0})
    with pytest.raises(Exception):  # noqa: B017  (KafkaException: no metadata)
        client.list_topics(timeout=3)
    client.poll(1)  # serves error_cb
    return errors


def test_wrong_scram_password_and_plaintext_are_refused(secure) -> None:
    good = kafka_client_config(secure)
    assert AdminClient(good).list_topics(timeout=10).brokers  # the right user gets in
    wrong = _refusal({**good, "sasl.password": "not-the-password"})
    assert any(e.code() == KafkaError._AUTHENTICATION for e in wrong), wrong
    assert _refusal({"bootstrap.servers": secure.kafka_bootstrap})  # no TLS, no SASL
    bus = KafkaBus.from_settings(secure.model_copy(update={"kafka_sasl_username": "intruder"}))
    bus.setup()
    assert not bus.ping(timeout=3)


def test_add_then_recall_through_sasl_tls_and_https(secure, stores, embedder, user_id) -> None:
    secured = Stores(stores.clickhouse, stores.milvus, stores.redis, KafkaBus.from_settings(secure))
    secured.kafka.setup()
    assert secured.kafka.ensure_topics()  # created over SASL_SSL
    rt = Runtime.build(secure, secured, embedder=embedder)
    flow = FlowThread(
        "ingest-tls", lambda: build_flow(rt), data_dir=None, epoch_s=0.5, stop=rt.stop
    )
    flow.start()
    services = Services(secure, secured, rt.memories, rt.cache, rt.tasks, rt.switches, embedder)
    app = create_app(secure, secured, services)
    ca = ssl.create_default_context(cafile=secure.kafka_ssl_ca_file)  # the stack's local CA
    try:
        assert flow.running.wait(30)
        with (
            serving(server_config(app, secure)),
            httpx.Client(base_url=api_base_url(secure), verify=ca, timeout=15) as client,
        ):
            assert client.base_url.scheme == "https"
            added = client.post(
                "/memory/v1/add",
                json={
                    "user_id": user_id,
                    "messages": [{"role": "user", "content": "I am allergic to peanuts."}],
                },
            ).json()
            assert added["code"] == 0, added
            task = added["data"]["task_id"]
            wait_for(
                lambda: client.get(f"/memory/v1/tasks/{task}").json()["data"]["status"] == "done",
                timeout=30,
                what="the add through the SASL_SSL broker",
            )
            found = client.post(
                "/memory/v1/recall",
                json={"user_id": user_id, "query": "what food allergy?", "timeout_ms": 5000},
            ).json()
            assert found["code"] == 0, found
            assert any("peanut" in m["content"] for m in found["data"]["memories"]), found
            with pytest.raises(httpx.ConnectError):  # a client that does not trust the CA
                httpx.get(f"{api_base_url(secure)}/readyz", timeout=5)
    finally:
        flow.stop()
        secured.kafka.close()


def _deliver(conf: dict, topic: str) -> KafkaError | None:
    results: list = []
    producer = Producer({**conf, "message.timeout.ms": 8000, "log_level": 0})
    producer.produce(topic, b"{}", key=b"1", on_delivery=lambda err, _msg: results.append(err))
    producer.flush(15)
    return results[0] if results else KafkaError(KafkaError._MSG_TIMED_OUT)


def test_acls_keep_other_principals_off_memory_commands(secure) -> None:
    """The README's lock: only memstream's principal may write memory.commands."""
    bus = KafkaBus.from_settings(secure)
    bus.setup()
    bus.ensure_topics()
    admin, conversations, commands = (
        bus.admin,
        bus.topic(TOPIC_CONVERSATIONS),
        bus.topic(TOPIC_COMMANDS),
    )
    scram = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    for fut in admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("platform", scram, b"platform-pw")]
    ).values():
        fut.result(10)
    allow = AclBinding(
        ResourceType.TOPIC,
        conversations,
        ResourcePatternType.LITERAL,
        "User:platform",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    for fut in admin.create_acls([allow]).values():
        fut.result(10)
    platform = {**kafka_client_config(secure), "sasl.username": "platform"}
    platform["sasl.password"] = "platform-pw"
    assert _deliver(platform, conversations) is None  # the platform may add
    denied = _deliver(platform, commands)
    assert denied is not None and denied.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _deliver(kafka_client_config(secure), commands) is None  # memstream may
    bus.close()
