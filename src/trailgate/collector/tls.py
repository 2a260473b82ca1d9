"""TLS for the collector connection, from certificate and key files named in parameters.

The standard library's ``ssl`` with its defaults (TLS 1.2 at least, the platform's ciphers,
host names checked against the certificate); what a person must supply is files, so each
missing or unreadable file is a :class:`~trailgate.errors.ConfigError` naming it, and a
failed handshake is a :class:`~trailgate.errors.NetworkError` saying which side refused
and why, in words rather than OpenSSL's codes alone.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from trailgate.errors import ConfigError, NetworkError

__all__ = ["TlsFiles", "client_context", "handshake_error", "peer_name", "server_context"]


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """``cert``/``key``: this side's certificate chain and key (PEM); ``ca``: the
    certificates this side trusts for its peer (a collector given one requires and checks
    client certificates: mutual authentication)."""

    cert: str | None = None
    key: str | None = None
    ca: str | None = None


def _check(path: str | None, what: str, where: str) -> None:
    if path is None:
        return
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{where}: {what} file {path} does not exist (or is not a file)")
    try:
        p.open("rb").close()
    except OSError as exc:
        raise ConfigError(f"{where}: {what} file {path} cannot be read: {exc.strerror}"
                          ) from None


def _load_chain(ctx: ssl.SSLContext, files: TlsFiles, where: str) -> None:
    if files.cert is None:
        return
    try:
        ctx.load_cert_chain(files.cert, files.key)
    except ssl.SSLError as exc:
        raise ConfigError(f"{where}: certificate {files.cert} and key "
                          f"{files.key or '(in the same file)'} do not load or do not "
                          f"match: {exc.reason or exc}") from None


def _load_ca(ctx: ssl.SSLContext, files: TlsFiles, where: str) -> None:
    try:
        ctx.load_verify_locations(cafile=files.ca)
    except ssl.SSLError as exc:
        raise ConfigError(f"{where}: CA file {files.ca} holds no usable certificate: "
                          f"{exc.reason or exc}") from None


def server_context(files: TlsFiles, where: str = "collector") -> ssl.SSLContext:
    """The collector's context: its certificate; with ``ca``, client certificates required."""
    if files.cert is None:
        raise ConfigError(f"{where}: TLS needs the collector's certificate and key "
                          f"(--tls-cert FILE --tls-key FILE)")
    for path, what in ((files.cert, "certificate"), (files.key, "key"), (files.ca, "CA")):
        _check(path, what, where)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    _load_chain(ctx, files, where)
    if files.ca is not None:
        _load_ca(ctx, files, where)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_context(files: TlsFiles, where: str) -> ssl.SSLContext:
    """The Pump's context: the collector's certificate checked against ``ca`` (else the
    system's trusted certificates), host name included; ``cert``/``key`` sent if given."""
    for path, what in ((files.cert, "certificate"), (files.key, "key"), (files.ca, "CA")):
        _check(path, what, where)
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if files.ca is not None:
        _load_ca(ctx, files, where)
    _load_chain(ctx, files, where)
    return ctx


def handshake_error(exc: Exception, peer: str, *, server: bool) -> NetworkError:
    """A failed TLS handshake in words: which side refused what."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        detail = exc.verify_message or str(exc)
        if server:
            return NetworkError(f"{peer}: TLS: refused the sender's certificate ({detail})")
        return NetworkError(f"{peer}: TLS: the collector's certificate is not trusted "
                            f"({detail}); check RMTHOST's CAFILE and the host name")
    reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
    if isinstance(exc, TimeoutError):
        reason = "no answer to the TLS handshake (is the peer speaking TLS?)"
    elif reason in ("WRONG_VERSION_NUMBER", "UNKNOWN_PROTOCOL", "HTTP_REQUEST",
                    "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
        reason = (f"the peer does not speak TLS ({reason}): start both ends with TLS or "
                  f"neither")
    elif reason in ("PEER_DID_NOT_RETURN_A_CERTIFICATE", "CERTIFICATE_REQUIRED",
                    "TLSV13_ALERT_CERTIFICATE_REQUIRED"):
        reason = ("the collector requires a client certificate: give RMTHOST's CERTFILE "
                  "and KEYFILE" if not server else "the sender sent no certificate")
    elif reason in ("TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_BAD_CERTIFICATE",
                    "SSLV3_ALERT_CERTIFICATE_UNKNOWN"):
        reason = ("the collector refused this sender's certificate" if not server else
                  "the sender refused the collector's certificate")
    return NetworkError(f"{peer}: TLS handshake failed: {reason}")


def peer_name(sock: ssl.SSLSocket) -> str | None:
    """The common name of the peer's verified certificate, if it sent one."""
    cert = sock.getpeercert()
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for pair in rdn:
            if len(pair) == 2 and pair[0] == "commonName":
                return str(pair[1])
    return None
