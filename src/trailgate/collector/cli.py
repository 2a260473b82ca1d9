"""``trailgate collector``: a collector in the foreground, on the target host's home.

Its settings are command-line options (where it listens, TLS files, whom it accepts); each
session's start, end and refusal goes to standard error and to the home's ``ggserr.log``.
Ctrl-C or SIGTERM stops it; a killed collector loses nothing acknowledged, since it
acknowledges only what it fsynced.  docs/pump.md, "The collector".
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import Any

from trailgate.collector.server import Collector, CollectorSettings
from trailgate.collector.tls import TlsFiles
from trailgate.collector.tokens import TOKEN_DOMAIN
from trailgate.errors import ConfigError
from trailgate.home import Home

__all__ = ["add_arguments", "run", "settings_from"]

_CODES = {"INFO": "OGG-01229", "WARNING": "OGG-01223", "ERROR": "OGG-01223"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=7819,
                        help="the port to listen on (default 7819; 0: any free port)")
    parser.add_argument("--bind", default="127.0.0.1",
                        help="the address to listen on (default 127.0.0.1; 0.0.0.0: every "
                             "interface)")
    parser.add_argument("--tls-cert", help="TLS: the collector's certificate (PEM)")
    parser.add_argument("--tls-key", help="TLS: the collector's private key (PEM)")
    parser.add_argument("--tls-ca", help="TLS: require client certificates signed by this CA")
    parser.add_argument("--token-alias",
                        help="require senders to prove the token stored under this alias "
                             f"(credential store domain {TOKEN_DOMAIN})")
    parser.add_argument("--allow", action="append", default=[], metavar="SENDER",
                        help="accept only this sender (its Pump group name, or its "
                             "certificate's common name); repeatable")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds a session may stay silent before it is closed")


def settings_from(args: Any, home: Home) -> CollectorSettings:
    if (args.tls_cert is None) != (args.tls_key is None):
        raise ConfigError("collector: --tls-cert and --tls-key go together")
    if args.tls_ca and not args.tls_cert:
        raise ConfigError("collector: --tls-ca (client certificates) needs TLS: give "
                          "--tls-cert and --tls-key too")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"collector: --port {args.port} is not a port number")
    return CollectorSettings.of(home.path, args.bind, args.port,
                                TlsFiles(args.tls_cert, args.tls_key, args.tls_ca),
                                args.token_alias, args.allow, timeout=args.timeout)


def run(args: argparse.Namespace) -> int:
    home = Home.locate(args.home)
    home.create()
    settings = settings_from(args, home)

    def log(level: str, message: str) -> None:
        print(f"{level} {message}", file=sys.stderr, flush=True)
        with contextlib.suppress(OSError):
            home.log_event(level, _CODES.get(level, "OGG-01229"), message)

    collector = Collector(settings, log)
    stopping = threading.Event()

    def stop(signum: int, frame: object) -> None:
        stopping.set()
        collector.stop()

    signal.signal(signal.SIGTERM, stop)
    mode = "TLS" + (" with client certificates" if settings.client_certs else "") \
        if settings.tls else "plain TCP"
    print(f"Collector listening on {settings.bind}:{collector.port} ({mode}), home "
          f"{home.path}", flush=True)
    log("INFO", f"collector listening on {settings.bind}:{collector.port} ({mode})")
    try:
        collector.serve_forever()
    except KeyboardInterrupt:
        collector.stop()
    log("INFO", "collector stopped")
    return 0
