"""The one place a confluent-kafka (librdkafka) client config is built from settings.

Every producer, consumer and admin client memstream makes — the shared bus, the
changes follower, Bytewax's KafkaSource, the stack's readiness probe, bench helpers —
starts from :func:`kafka_client_config`, so TLS and SASL/SCRAM apply everywhere at once.
With the defaults (PLAINTEXT) the config is just ``bootstrap.servers``: nothing changes
for a plaintext broker.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.settings import Settings

# A librdkafka setting's value, as confluent-kafka's AdminClient types it; a config maps
# the settings' names ("linger.ms") to them. (A consumer or producer also takes a
# Python object or two, e.g. a Logger as "logger": added beside the config.)
ConfValue = str | int | float | bool
KafkaConf = dict[str, ConfValue]


def kafka_security_config(s: Settings) -> dict[str, str]:
    """The security part alone (what Bytewax's ``add_config`` takes); {} for PLAINTEXT."""
    protocol = s.kafka_security_protocol
    if protocol == "PLAINTEXT":
        return {}
    conf = {"security.protocol": protocol.lower()}
    if protocol.startswith("SASL_"):
        conf |= {
            "sasl.mechanisms": s.kafka_sasl_mechanism,
            "sasl.username": s.kafka_sasl_username,
            "sasl.password": s.kafka_sasl_password.get_secret_value(),
        }
    if protocol in ("SSL", "SASL_SSL"):
        if s.kafka_ssl_ca_file:
            conf["ssl.ca.location"] = s.kafka_ssl_ca_file
        if s.kafka_ssl_cert_file:
            conf["ssl.certificate.location"] = s.kafka_ssl_cert_file
            conf["ssl.key.location"] = s.kafka_ssl_key_file
        if s.kafka_ssl_key_password.get_secret_value():
            conf["ssl.key.password"] = s.kafka_ssl_key_password.get_secret_value()
        conf["ssl.endpoint.identification.algorithm"] = (
            "https" if s.kafka_ssl_check_hostname else "none"
        )
    return conf


def kafka_client_config(s: Settings, extra: Mapping[str, ConfValue] | None = None) -> KafkaConf:
    """``bootstrap.servers`` + security + the caller's own keys (librdkafka names)."""
    return {"bootstrap.servers": s.kafka_bootstrap, **kafka_security_config(s), **(extra or {})}
