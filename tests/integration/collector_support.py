"""Shared by the collector tests: test certificates (a CA, a server and client certificate it
signs, and one it does not), an in-process collector, a written local trail, file bytes."""

from __future__ import annotations

import datetime
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from trailgate.collector.server import Collector, CollectorSettings
from trailgate.collector.tls import TlsFiles, server_context
from trailgate.trail.naming import TrailName


@dataclass(frozen=True)
class Certs:
    ca: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str
    other_ca: str  # a CA that signed nothing here
    stranger_cert: str  # a client certificate signed by other_ca
    stranger_key: str


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(path: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> tuple[str, str]:
    path.with_suffix(".pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    path.with_suffix(".key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return str(path.with_suffix(".pem")), str(path.with_suffix(".key"))


def _cert(cn: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
          issuer_key: ec.EllipticCurvePrivateKey, *, ca: bool = False,
          server: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(issuer)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
        builder = builder.add_extension(
            x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False)
    if server:
        import ipaddress

        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_certs(directory: Path) -> Certs:
    """A CA with a server certificate (localhost, 127.0.0.1) and a client certificate for
    PUMP1; another CA with a client certificate for STRANGER."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("trailgate test CA", ca_key, _name("trailgate test CA"), ca_key, ca=True)
    ca_path, _ = _write(directory / "ca", ca, ca_key)
    s_key = ec.generate_private_key(ec.SECP256R1())
    server = _write(directory / "server", _cert("localhost", s_key, ca.subject, ca_key,
                                                server=True), s_key)
    c_key = ec.generate_private_key(ec.SECP256R1())
    client = _write(directory / "client", _cert("PUMP1", c_key, ca.subject, ca_key), c_key)
    o_key = ec.generate_private_key(ec.SECP256R1())
    other = _cert("other CA", o_key, _name("other CA"), o_key, ca=True)
    other_path, _ = _write(directory / "other-ca", other, o_key)
    x_key = ec.generate_private_key(ec.SECP256R1())
    stranger = _write(directory / "stranger", _cert("STRANGER", x_key, other.subject, o_key),
                      x_key)
    return Certs(ca_path, *server, *client, other_path, *stranger)


@contextmanager
def running_collector(home: Path, *, token: str | None = "s3cret-token",
                      certs: Certs | None = None, client_certs: bool = False,
                      allow: frozenset[str] = frozenset(), timeout: float = 30.0,
                      log: list[tuple[str, str]] | None = None) -> Iterator[Collector]:
    """A collector serving ``home`` on a free loopback port, in this process."""
    tls = None
    if certs is not None:
        tls = server_context(TlsFiles(certs.server_cert, certs.server_key,
                                      certs.ca if client_certs else None))
    settings = CollectorSettings(home=home, port=0, tls=tls, client_certs=client_certs,
                                 token=token, allow=allow, timeout=timeout,
                                 handshake_timeout=1.0)
    events = log if log is not None else []
    collector = Collector(settings, lambda level, message: events.append((level, message)))
    collector.start()
    try:
        yield collector
    finally:
        collector.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def trail_bytes(trail: Path | str) -> dict[str, bytes]:
    """Every file of a trail by name, as bytes."""
    name = TrailName(trail)
    return {name.file(s).name: name.file(s).read_bytes() for s in name.sequence_numbers()}
