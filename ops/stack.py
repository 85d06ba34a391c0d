"""The local stack: Kafka (KRaft) and Redis servers plus the node, under the data dir.

Used by ``memstream up/down/status`` and by the test session (on free ports, in a
temporary data dir), so the tests exercise the very code that users run.

The broker listens in plaintext unless given a :class:`KafkaSecurity`: then its one
client listener is SSL, SASL_PLAINTEXT or SASL_SSL (SCRAM), with a self-signed CA and
broker certificate under ``<data_dir>/tls`` (ops.tls) and the SCRAM user written into
the storage when it is formatted (KIP-900). The KRaft controller listener is then TLS
with client certificates: only the broker's own CA-signed certificate gets in. With
``authorizer`` the broker enforces ACLs (no ACL = denied; the SCRAM user is super).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from pydantic import SecretStr

from core.settings import Settings
from ops.procs import Proc, StackError, port_open, wait_until

REPO_ROOT = Path(__file__).resolve().parent.parent
KAFKA_LIB = REPO_ROOT / "ops" / "kafka" / "lib"
KAFKA_HEAP = os.environ.get("MEMSTREAM_KAFKA_HEAP", "-Xms256m -Xmx768m")


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int


def kafka_endpoint(bootstrap: str) -> Endpoint:
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    return Endpoint(host, int(port))


def redis_endpoint(url: str) -> Endpoint:
    parsed = urlparse(url)
    return Endpoint(parsed.hostname or "127.0.0.1", parsed.port or 6379)


@dataclass(frozen=True)
class KafkaSecurity:
    """How the local broker's client listener is secured (None = plaintext)."""

    protocol: str  # SSL | SASL_PLAINTEXT | SASL_SSL
    mechanism: str = "SCRAM-SHA-512"
    username: str = ""
    password: str = ""
    # Kafka's StandardAuthorizer on, no ACL = denied; this user (and the broker) super.
    authorizer: bool = False

    @classmethod
    def from_settings(cls, s: Settings) -> KafkaSecurity | None:
        if s.kafka_security_protocol == "PLAINTEXT":
            return None
        return cls(
            s.kafka_security_protocol,
            s.kafka_sasl_mechanism,
            s.kafka_sasl_username,
            s.kafka_sasl_password.get_secret_value(),
        )

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")

    def fingerprint(self) -> str:
        """What the storage was formatted for (the password only as a hash)."""
        secret = hashlib.sha256(self.password.encode()).hexdigest()[:16]
        return f"{self.protocol} {self.mechanism if self.sasl else '-'} {self.username} {secret}"


def tls_dir(data_dir: Path) -> Path:
    """Where the stack keeps its CA (ca.pem: what clients trust) and server certificates."""
    return data_dir / "tls"


def _procs(data_dir: Path) -> dict[str, Proc]:
    run, logs = data_dir / "run", data_dir / "logs"
    return {
        "kafka": Proc("kafka", run, logs, marker=str(data_dir / "kafka" / "server.properties")),
        "redis": Proc("redis", run, logs, marker=f"memstream-redis {data_dir}"),
        "node": Proc("node", run, logs, marker=f"ops.node {data_dir}"),
    }


# ---------------------------------------------------------------- Kafka
def _kafka_properties(
    data_dir: Path,
    ep: Endpoint,
    controller_port: int,
    partitions: int,
    security: KafkaSecurity | None = None,
) -> str:
    lst = security.protocol if security else "PLAINTEXT"  # listener name = its protocol
    ctl = "SSL" if security else "PLAINTEXT"  # secured: the controller wants a CA-signed cert
    return "\n".join(
        [
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.bootstrap.servers={ep.host}:{controller_port}",
            f"listeners={lst}://{ep.host}:{ep.port},CONTROLLER://{ep.host}:{controller_port}",
            f"advertised.listeners={lst}://{ep.host}:{ep.port}",
            "controller.listener.names=CONTROLLER",
            f"inter.broker.listener.name={lst}",
            f"listener.security.protocol.map=CONTROLLER:{ctl},{lst}:{lst}",
            *_security_properties(data_dir, ep, security),
            f"log.dirs={data_dir / 'kafka' / 'data'}",
            f"num.partitions={partitions}",
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=8",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            "log.retention.check.interval.ms=60000",
            "message.max.bytes=4194304",
            "",
        ]
    )


_UNSAFE = set('"\\,[]=\n\r\t ')


def _security_properties(data_dir: Path, ep: Endpoint, security: KafkaSecurity | None) -> list[str]:
    if security is None:
        return []
    lines = []
    if security.sasl:
        for what, value in (("user name", security.username), ("password", security.password)):
            if not value or _UNSAFE & set(value):
                raise StackError(
                    f'kafka: the SCRAM {what} must be non-empty, without spaces or any of " \\ , [ ] ='
                )
        mech = security.mechanism
        jaas = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{security.username}" password="{security.password}";'
        )
        lines += [
            f"sasl.enabled.mechanisms={mech}",
            f"sasl.mechanism.inter.broker.protocol={mech}",
            f"listener.name.{security.protocol.lower()}.{mech.lower()}.sasl.jaas.config={jaas}",
        ]
    from ops.tls import issue_server_cert, subject  # cryptography, only when asked for

    # The broker's certificate serves the TLS client listener and the controller listener,
    # where it is also the broker's client certificate (nobody without one gets in).
    cert = issue_server_cert(tls_dir(data_dir), "kafka", [ep.host])
    lines += [
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={cert.bundle}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={cert.ca}",
        "ssl.client.auth=none",
        "listener.name.controller.ssl.client.auth=required",
    ]
    if security.authorizer:
        if not security.sasl:
            raise StackError("kafka: the authorizer needs a SASL protocol (the users' principals)")
        lines += [
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found=false",
            f"super.users=User:{subject(cert.cert)};User:{security.username}",
        ]
    return lines


def _probe_config(bootstrap: str, data_dir: Path, security: KafkaSecurity | None) -> dict:
    """The client config the stack's own checks use, built by sinks.kafka_config."""
    from sinks.kafka_config import kafka_client_config

    if security is None:
        return {"bootstrap.servers": bootstrap}
    s = Settings.model_construct(
        kafka_bootstrap=bootstrap,
        kafka_security_protocol=security.protocol,
        kafka_sasl_mechanism=security.mechanism,
        kafka_sasl_username=security.username,
        kafka_sasl_password=SecretStr(security.password),
        kafka_ssl_ca_file=str(tls_dir(data_dir) / "ca.pem"),
    )
    return kafka_client_config(s)


def _java() -> str:
    java = shutil.which("java")
    if not java:
        raise StackError("kafka: java not found (install a JDK 17+)")
    return java


def start_kafka(
    data_dir: Path,
    bootstrap: str,
    partitions: int = 8,
    controller_port: int | None = None,
    timeout: float = 90,
    security: KafkaSecurity | None = None,
) -> int:
    """Start the broker (formatting its storage the first time); return its pid.

    With ``security``, the client listener is secured as it says; a storage formatted
    for another security setup is refused (the SCRAM user lives in the storage).
    """
    proc = _procs(data_dir)["kafka"]
    if (pid := proc.pid()) is not None:
        return pid
    if not KAFKA_LIB.is_dir() or not any(KAFKA_LIB.glob("kafka_2.13-*.jar")):
        raise StackError(
            f"kafka: jars missing in {KAFKA_LIB}; run `make deps` "
            "(mvn -q dependency:copy-dependencies in ops/kafka)"
        )
    ep = kafka_endpoint(bootstrap)
    if port_open(ep.host, ep.port):
        raise StackError(f"kafka: port {ep.host}:{ep.port} is already in use by another process")
    kdir = data_dir / "kafka"
    kdir.mkdir(parents=True, exist_ok=True)
    cport = controller_port or _stored_controller_port(kdir) or ep.port + 1
    props = kdir / "server.properties"
    props.touch(mode=0o600)  # may hold the broker's SCRAM password
    props.write_text(_kafka_properties(data_dir, ep, cport, partitions, security))
    (kdir / "controller.port").write_text(str(cport))
    classpath = f"{KAFKA_LIB}/*"
    formatted_for = kdir / "security"
    wanted = security.fingerprint() if security else "PLAINTEXT"
    if (kdir / "data" / "meta.properties").exists():
        have = formatted_for.read_text().strip() if formatted_for.exists() else "PLAINTEXT"
        if have != wanted:
            raise StackError(
                f"kafka: the storage in {kdir / 'data'} was formatted for {have.split()[0]} "
                f"(or another SCRAM user); to change the broker's security, stop the stack and "
                f"remove {kdir}"
            )
    else:
        cluster_id = _cluster_id()
        scram = (
            ["--add-scram", f"{security.mechanism}=[name={security.username},"
             f"password={security.password}]"]
            if security and security.sasl
            else []
        )  # fmt: skip
        fmt = subprocess.run(
            [
                _java(),
                "-cp",
                classpath,
                "kafka.tools.StorageTool",
                "format",
                "--standalone",
                "-t",
                cluster_id,
                "-c",
                str(props),
                *scram,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if fmt.returncode != 0:
            raise StackError(f"kafka: storage format failed:\n{fmt.stdout}\n{fmt.stderr}")
        formatted_for.write_text(wanted + "\n")
    env = {**os.environ, "KAFKA_HEAP_OPTS": KAFKA_HEAP}
    argv = [
        _java(),
        *KAFKA_HEAP.split(),
        "-XX:+UseG1GC",
        "-Djava.awt.headless=true",
        f"-Dkafka.logs.dir={data_dir / 'logs'}",
        "-cp",
        classpath,
        "kafka.Kafka",
        str(props),
    ]
    pid = proc.start(argv, env=env)
    probe = _probe_config(bootstrap, data_dir, security)
    wait_until(lambda: _kafka_answers(probe), timeout, "kafka", proc)
    return pid


def _cluster_id() -> str:
    """A Kafka cluster id (base64url uuid) that argparse cannot mistake for an option."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _stored_controller_port(kdir: Path) -> int | None:
    try:
        return int((kdir / "controller.port").read_text())
    except (FileNotFoundError, ValueError):
        return None


def _kafka_answers(conf: dict) -> bool:
    ep = kafka_endpoint(conf["bootstrap.servers"])
    if not port_open(ep.host, ep.port):
        return False
    from confluent_kafka.admin import AdminClient  # heavy import, only when needed

    try:
        md = AdminClient(conf).list_topics(timeout=2)
        return bool(md.brokers)
    except Exception:
        return False


# ---------------------------------------------------------------- Redis
def redis_binary() -> str:
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if not found:
        raise StackError(
            "redis: redis-server not found; run `make deps` (apt-get install redis-server)"
        )
    return found


def start_redis(data_dir: Path, url: str, timeout: float = 20) -> int:
    """Start Redis for ``url``; a ``rediss://`` URL gets a TLS-only port, with a
    certificate from the stack's CA (clients: ``?ssl_ca_certs=<data_dir>/tls/ca.pem``)."""
    proc = _procs(data_dir)["redis"]
    if (pid := proc.pid()) is not None:
        return pid
    ep = redis_endpoint(url)
    if port_open(ep.host, ep.port):
        raise StackError(f"redis: port {ep.host}:{ep.port} is already in use by another process")
    rdir = data_dir / "redis"
    rdir.mkdir(parents=True, exist_ok=True)
    if urlparse(url).scheme == "rediss":
        from ops.tls import issue_server_cert  # cryptography, only when asked for

        cert = issue_server_cert(tls_dir(data_dir), "redis", [ep.host])
        ports = ["--port", "0", "--tls-port", str(ep.port), "--tls-auth-clients", "no"]
        ports += ["--tls-cert-file", str(cert.cert), "--tls-key-file", str(cert.key)]
        ports += ["--tls-ca-cert-file", str(cert.ca)]
    else:
        ports = ["--port", str(ep.port)]
    argv = [
        redis_binary(),
        "--bind",
        ep.host,
        *ports,
        "--dir",
        str(rdir),
        "--daemonize",
        "no",
        "--protected-mode",
        "yes",
        "--appendonly",
        "yes",
        "--save",
        "60 1",
        "--logfile",
        "",
        "--proc-title-template",
        f"{{title}} memstream-redis {data_dir}",
    ]
    pid = proc.start(argv)
    wait_until(lambda: port_open(ep.host, ep.port), timeout, "redis", proc)
    return pid


# ---------------------------------------------------------------- node
def start_node(data_dir: Path, env: dict[str, str] | None = None) -> int:
    proc = _procs(data_dir)["node"]
    if (pid := proc.pid()) is not None:
        return pid
    full_env = {**os.environ, **(env or {}), "MEMSTREAM_DATA_DIR": str(data_dir)}
    return proc.start(
        [sys.executable, "-m", "ops.node", str(data_dir)], env=full_env, cwd=REPO_ROOT
    )


def running(data_dir: Path) -> dict[str, int | None]:
    return {name: p.pid() for name, p in _procs(data_dir).items()}


def stop(data_dir: Path, names: tuple[str, ...] = ("node", "kafka", "redis")) -> list[str]:
    """Stop in dependency order (node first); return the names that were stopped."""
    procs = _procs(data_dir)
    return [name for name in names if procs[name].stop()]


def proc(data_dir: Path, name: str) -> Proc:
    return _procs(data_dir)[name]
