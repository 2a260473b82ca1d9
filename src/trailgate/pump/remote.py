"""A Pump's ``RMTHOST``: the collector it sends its trail to, and how.

``RMTHOST host, PORT n`` with ``RMTTRAIL ./dirdat/rt`` makes the Pump a sender: it writes
its output into a staging trail in its own home (``dirrmt/GROUP/rt``) and mirrors it to the
collector before each checkpoint (:mod:`trailgate.collector.client`).  Every option is
checked when the Pump starts, and a wrong one names the parameter file and what to write.
docs/pump.md, "Remote trails"; docs/parameters.md.
"""

from __future__ import annotations

from pathlib import Path

from trailgate.collector.client import RemoteTarget
from trailgate.collector.tls import TlsFiles
from trailgate.collector.tokens import stored_token
from trailgate.errors import ConfigError
from trailgate.home import Home
from trailgate.params import ExtractParams
from trailgate.trail.naming import TrailName

__all__ = ["remote_target", "staging_trail"]

_FLAGS = {"COMPRESS", "TLS", "KEEPSTAGING"}
_VALUES = {"PORT", "MGRPORT", "TIMEOUT", "RETRIES", "CAFILE", "CERTFILE", "KEYFILE",
           "TOKENALIAS"}
#: GoldenGate options with no effect here (the transport tunes itself)
_IGNORED = {"TCPBUFSIZE", "TCPFLUSHBYTES", "COMPRESSTHRESHOLD", "STREAMING", "NOSTREAMING"}


def staging_trail(home: Home, group: str, label: str) -> Path:
    """Where a remote Pump writes its output before it is sent: ``dirrmt/GROUP/xx``."""
    return home.path / "dirrmt" / group.upper() / TrailName(label).prefix


def _number(options: dict[str, str], key: str, params: ExtractParams, low: int,
            high: int) -> int | None:
    text = options.get(key)
    if text is None:
        return None
    if not text.isdigit() or not low <= int(text) <= high:
        raise ConfigError(f"RMTHOST …, {key} {text}: expected a whole number from {low} to "
                          f"{high}", path=params.path)
    return int(text)


def remote_target(home: Home, params: ExtractParams, label: str,
                  group: str) -> RemoteTarget | None:
    """The collector the Pump sends ``label`` to (``None``: no RMTHOST, a local trail)."""
    options = params.rmthost
    if not options:
        return None
    if not params.rmttrails:
        raise ConfigError("RMTHOST sends a remote trail: name it with RMTTRAIL (EXTTRAIL is "
                          "a local trail)", path=params.path)
    host = options.get("HOST", "")
    for key, value in options.items():
        if key == "HOST" or key in _IGNORED:
            continue
        if key in _FLAGS and value:
            raise ConfigError(f"RMTHOST …, {key} takes no value (found {value!r})",
                              path=params.path)
        if key in _VALUES and not value:
            raise ConfigError(f"RMTHOST …, {key} needs a value", path=params.path)
        if key not in _FLAGS | _VALUES:
            raise ConfigError(f"RMTHOST: unknown option {key} (known: "
                              f"{', '.join(sorted(_FLAGS | _VALUES))})", path=params.path)
    port = _number(options, "PORT", params, 1, 65535)
    mgrport = _number(options, "MGRPORT", params, 1, 65535)
    if port is not None and mgrport is not None:
        raise ConfigError(f"RMTHOST {host}: PORT (a collector's) or MGRPORT (a Manager "
                          f"running one), not both", path=params.path)
    if port is None and mgrport is None:
        raise ConfigError(f"RMTHOST {host}: give the collector's port (RMTHOST {host}, PORT "
                          f"7819) or the port of a Manager that runs one (MGRPORT 7809)",
                          path=params.path)
    files = [options.get(k) for k in ("CERTFILE", "KEYFILE", "CAFILE")]
    if any(files) and "TLS" not in options:
        raise ConfigError("RMTHOST …, CAFILE/CERTFILE/KEYFILE are TLS files: add TLS",
                          path=params.path)
    if bool(options.get("CERTFILE")) != bool(options.get("KEYFILE")):
        raise ConfigError("RMTHOST …, CERTFILE and KEYFILE go together (the Pump's client "
                          "certificate and its key)", path=params.path)

    def file(key: str) -> str | None:
        value = options.get(key)
        return str(home.resolve(value)) if value else None

    tls = TlsFiles(file("CERTFILE"), file("KEYFILE"), file("CAFILE")) \
        if "TLS" in options else None
    token = stored_token(home.path, options.get("TOKENALIAS"))
    timeout = _number(options, "TIMEOUT", params, 1, 86400)
    retries = _number(options, "RETRIES", params, 0, 1_000_000)
    return RemoteTarget(host=host, port=port or 0, mgrport=mgrport, trail=label,
                        sender=group.upper(), tls=tls,
                        token=token, compress="COMPRESS" in options,
                        timeout=float(timeout or 60), retries=retries)
