"""A self-signed CA and server certificates for the local stack (``cryptography``).

For trying TLS on one machine — the broker of ``memstream up`` with a secured
``kafka_security_protocol``, the API behind ``api_tls_cert_file`` — not for production,
where certificates come from your own CA. Files are PEM: keys unencrypted (PKCS#8,
mode 0600); ``<name>.bundle.pem`` holds key + certificate chain, the shape Kafka's PEM
keystore reads.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 825


@dataclass(frozen=True)
class ServerCert:
    ca: Path  # the CA certificate clients trust
    cert: Path  # server certificate + CA (chain)
    key: Path
    bundle: Path  # key + chain, for a Kafka PEM keystore


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if private:
        os.chmod(path, 0o600)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "memstream local stack"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def ensure_ca(tls_dir: Path) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """The CA in ``tls_dir`` (ca.pem, ca.key), made the first time."""
    key_path, cert_path = tls_dir / "ca.key", tls_dir / "ca.pem"
    if key_path.exists() and cert_path.exists():
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{key_path}: not an EC key")
        return key, x509.load_pem_x509_certificate(cert_path.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    name = _name("memstream local CA")
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write(key_path, _key_pem(key), private=True)
    _write(cert_path, _cert_pem(cert))
    return key, cert


def _san(hosts: list[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for h in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(names)


def issue_server_cert(tls_dir: Path, name: str, hosts: list[str]) -> ServerCert:
    """A server certificate ``<name>`` for ``hosts`` (IPs or DNS names), signed by the CA.

    Reissued each call (cheap): the hosts may differ from the last start.
    """
    ca_key, ca_cert = ensure_ca(tls_dir)
    hosts = list(dict.fromkeys([*hosts, "127.0.0.1", "localhost"]))
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_san(hosts), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    chain = _cert_pem(cert) + _cert_pem(ca_cert)
    out = ServerCert(
        ca=tls_dir / "ca.pem",
        cert=tls_dir / f"{name}.pem",
        key=tls_dir / f"{name}.key",
        bundle=tls_dir / f"{name}.bundle.pem",
    )
    _write(out.key, _key_pem(key), private=True)
    _write(out.cert, chain)
    _write(out.bundle, _key_pem(key) + chain, private=True)
    return out


def subject(cert_file: Path) -> str:
    """A certificate's subject as Kafka names an SSL principal (``CN=…,O=…``)."""
    return x509.load_pem_x509_certificate(cert_file.read_bytes()).subject.rfc4514_string()
