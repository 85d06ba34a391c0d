"""TLS and broker-auth settings: plaintext stays exactly as before by default; the
secured configs carry the librdkafka / uvicorn names; half a pair is refused."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from pydantic import SecretStr

from core.settings import Settings, SettingsError, load_settings
from ops import stack
from ops.tls import issue_server_cert
from recall_api.serving import api_base_url, server_config, ssl_options
from sinks.kafka import KafkaBus
from sinks.kafka_config import kafka_client_config, kafka_security_config


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for key in list(os.environ):
        if key.startswith("MEMSTREAM_"):
            monkeypatch.delenv(key)
    return monkeypatch


def test_plaintext_is_the_default_and_unchanged(clean_env) -> None:
    s = load_settings()
    assert s.kafka_security_protocol == "PLAINTEXT"
    assert kafka_client_config(s) == {"bootstrap.servers": "127.0.0.1:9092"}
    assert kafka_client_config(s, {"group.id": "g"}) == {
        "bootstrap.servers": "127.0.0.1:9092",
        "group.id": "g",
    }
    bus = KafkaBus.from_settings(s)
    assert bus.security == {}
    assert bus.client_config() == {"bootstrap.servers": "127.0.0.1:9092"}
    assert stack.KafkaSecurity.from_settings(s) is None
    assert ssl_options(s) == {} and api_base_url(s) == "http://127.0.0.1:8000"
    config = server_config(object(), s)
    assert config.ssl_certfile is None and config.ssl_keyfile is None


def test_plaintext_broker_properties_unchanged(tmp_path: Path) -> None:
    props = stack._kafka_properties(tmp_path, stack.Endpoint("127.0.0.1", 9092), 9093, 2)
    assert "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093" in props
    assert "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT" in props
    assert "sasl" not in props and "ssl" not in props


def test_sasl_ssl_client_config(clean_env) -> None:
    s = load_settings(
        kafka_bootstrap="broker:9096",
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="SCRAM-SHA-256",
        kafka_sasl_username="memstream",
        kafka_sasl_password="pw",
        kafka_ssl_ca_file="/etc/ca.pem",
    )
    assert kafka_client_config(s) == {
        "bootstrap.servers": "broker:9096",
        "security.protocol": "sasl_ssl",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "memstream",
        "sasl.password": "pw",
        "ssl.ca.location": "/etc/ca.pem",
        "ssl.endpoint.identification.algorithm": "https",
    }
    assert KafkaBus.from_settings(s).security == kafka_security_config(s)
    assert "***" in str(s.masked()["kafka_sasl_password"])  # never shown


def test_mutual_tls_and_no_hostname_check(clean_env) -> None:
    s = load_settings(
        kafka_security_protocol="SSL",
        kafka_ssl_cert_file="/c.pem",
        kafka_ssl_key_file="/k.pem",
        kafka_ssl_key_password="kp",
        kafka_ssl_check_hostname=False,
    )
    assert kafka_security_config(s) == {
        "security.protocol": "ssl",
        "ssl.certificate.location": "/c.pem",
        "ssl.key.location": "/k.pem",
        "ssl.key.password": "kp",
        "ssl.endpoint.identification.algorithm": "none",
    }


@pytest.mark.parametrize(
    "bad, named",
    [
        ({"kafka_security_protocol": "SASL_SSL"}, "kafka_sasl_username"),
        ({"kafka_security_protocol": "SASL_PLAINTEXT", "kafka_sasl_username": "u"}, "password"),
        ({"kafka_security_protocol": "GSSAPI"}, "kafka_security_protocol"),
        ({"kafka_sasl_mechanism": "PLAIN"}, "kafka_sasl_mechanism"),
        ({"api_tls_cert_file": "/c.pem"}, "api_tls_key_file"),
        ({"kafka_ssl_key_file": "/k.pem"}, "kafka_ssl_cert_file"),
    ],
)
def test_half_configured_security_is_refused(clean_env, bad, named) -> None:
    with pytest.raises(SettingsError, match=named):
        load_settings(**bad)


def test_env_names(clean_env) -> None:
    clean_env.setenv("MEMSTREAM_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    clean_env.setenv("MEMSTREAM_KAFKA_SASL_USERNAME", "memstream")
    clean_env.setenv("MEMSTREAM_KAFKA_SASL_PASSWORD", "pw")
    s = load_settings()
    assert kafka_security_config(s)["security.protocol"] == "sasl_plaintext"
    assert "ssl.ca.location" not in kafka_security_config(s)  # no TLS keys without TLS


def test_https_when_given_a_certificate(tmp_path: Path) -> None:
    cert = issue_server_cert(tmp_path, "api", ["127.0.0.1"])
    s = Settings(
        api_tls_cert_file=str(cert.cert),
        api_tls_key_file=str(cert.key),
        api_tls_key_password=SecretStr(""),
    )
    assert api_base_url(s) == "https://127.0.0.1:8000"
    config = server_config(object(), s)
    assert (config.ssl_certfile, config.ssl_keyfile) == (str(cert.cert), str(cert.key))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(str(cert.cert), str(cert.key))  # the key matches the certificate
    assert oct(cert.key.stat().st_mode & 0o777) == "0o600"


def test_secured_broker_properties(tmp_path: Path) -> None:
    sec = stack.KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", "memstream", "pw")
    props = stack._kafka_properties(tmp_path, stack.Endpoint("127.0.0.1", 9092), 9093, 1, sec)
    assert "listeners=SASL_SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093" in props
    assert "inter.broker.listener.name=SASL_SSL" in props
    assert "sasl.enabled.mechanisms=SCRAM-SHA-512" in props
    assert "ssl.keystore.type=PEM" in props
    assert "listener.security.protocol.map=CONTROLLER:SSL,SASL_SSL:SASL_SSL" in props
    assert "listener.name.controller.ssl.client.auth=required" in props  # broker cert only
    assert "authorizer.class.name" not in props
    assert (tmp_path / "tls" / "ca.pem").exists()
    acl = stack.KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", "memstream", "pw", authorizer=True)
    props = stack._kafka_properties(tmp_path, stack.Endpoint("127.0.0.1", 9092), 9093, 1, acl)
    assert "allow.everyone.if.no.acl.found=false" in props
    assert "super.users=User:CN=127.0.0.1,O=memstream local stack;User:memstream" in props
    with pytest.raises(stack.StackError, match="SCRAM password"):
        bad = stack.KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", "memstream", 'p"w')
        stack._kafka_properties(tmp_path, stack.Endpoint("127.0.0.1", 9092), 9093, 1, bad)


def test_clickhouse_https_url_tls_options() -> None:
    from sinks.clickhouse import server_kwargs

    plain = server_kwargs("http://ch:8123", "default", "")
    assert plain["secure"] is False and "ca_cert" not in plain and plain["port"] == 8123
    tls = server_kwargs(
        "https://ch?ca_cert=/etc/ca.pem&client_cert=/c.pem&client_cert_key=/k.pem", "u", "p"
    )
    assert (tls["secure"], tls["port"], tls["ca_cert"]) == (True, 8443, "/etc/ca.pem")
    assert (tls["client_cert"], tls["client_cert_key"]) == ("/c.pem", "/k.pem")
    assert server_kwargs("https://ch:9440?verify=false", "u", "p")["verify"] is False
    with pytest.raises(ValueError, match="unsupported"):
        server_kwargs("https://ch?sslmode=require", "u", "p")
    with pytest.raises(ValueError, match="unsupported"):
        server_kwargs("http://ch?ca_cert=/etc/ca.pem", "u", "p")  # TLS options need https


def test_cli_calls_trust_the_api_ca(tmp_path: Path) -> None:
    from recall_api.serving import client_verify

    assert client_verify(Settings()) is True  # plain HTTP: httpx's default
    cert = issue_server_cert(tmp_path, "api", ["127.0.0.1"])
    s = Settings(
        api_tls_cert_file=str(cert.cert),
        api_tls_key_file=str(cert.key),
        api_tls_ca_file=str(cert.ca),
    )
    ctx = client_verify(s)
    assert isinstance(ctx, ssl.SSLContext) and ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.get_ca_certs()  # the local CA loaded
