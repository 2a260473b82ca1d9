"""The ``trailgate`` command: one entry point, subcommands implemented in their own modules.

Each subcommand's module is imported only when it runs, so ``trailgate logdump`` starts
without loading Spark or a database driver.  Every :class:`TrailgateError` becomes a message
and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from trailgate import __version__
from trailgate.errors import TrailgateError

__all__ = ["main"]

#: subcommand path -> (module, function, help). The function takes the parsed arguments.
_COMMANDS: dict[tuple[str, ...], tuple[str, str, str]] = {
    ("logdump",): ("trailgate.logdump.cli", "run", "inspect trail files (Logdump)"),
    ("trail", "dump"): ("trailgate.logdump.annotate", "run",
                        "annotated hex dump of a trail file (TrailAnalyzer style)"),
    ("trail", "export"): ("trailgate.interchange", "run_export",
                          "write a trail's changes as JSON Lines"),
    ("trail", "import"): ("trailgate.interchange", "run_import",
                          "write JSON Lines change records into a trail"),
    ("ggsci",): ("trailgate.ggsci.shell", "run",
                 "the GGSCI command interpreter (interactive, or an obey file on stdin)"),
    ("run", "extract"): ("trailgate.run", "run_extract",
                         "run an Extract group in the foreground (Ctrl-C stops it cleanly)"),
    ("run", "replicat"): ("trailgate.run", "run_replicat",
                          "run a Replicat group in the foreground (Ctrl-C stops it cleanly)"),
    ("manager",): ("trailgate.manager.service", "run",
                   "the Manager in the foreground: AUTOSTART/AUTORESTART, PURGEOLDEXTRACTS, lag "
                   "reports, /metrics, the REST API and the web console (dirprm/mgr.prm)"),
    ("collector",): ("trailgate.collector.cli", "run",
                     "a collector in the foreground: accepts Data Pumps (RMTHOST host, PORT n) "
                     "and writes the remote trails they send"),
    ("compare",): ("trailgate.compare.run", "run",
                   "compare an Extract's source tables with a Replicat's targets (hash per "
                   "range, rows where ranges differ, in-flight rows confirmed)"),
    ("capture", "oracle-dump"): ("trailgate.capture.oracle.cli", "run",
                                 "one-shot: Oracle redo logfile dumps to a trail"),
    ("keygen",): ("trailgate.trail.keygen", "run",
                  "add a trail encryption key (a new version if the name exists) to the home's "
                  "ENCKEYS file, readable only by its owner"),
    ("sample",): ("trailgate.sample", "run", "write a sample trail (seed 003's workload)"),
    ("demo",): ("trailgate.demo", "run",
                "the demo: seed 003 replicated end to end (PostgreSQL → Extract → Pump → "
                "Replicat → PostgreSQL and Delta), compared"),
}


def _selected(argv: Sequence[str]) -> tuple[str, ...] | None:
    """The subcommand path named in ``argv``: only its module is imported to add arguments,
    so one subcommand's heavy imports never slow another."""
    words: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--home":
            skip = True
        elif not word.startswith("-"):
            words.append(word)
    for path in _COMMANDS:
        if tuple(words[: len(path)]) == path:
            return path
    return None


def _build_parser(selected: tuple[str, ...] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trailgate",
        description="Log-based change data capture and replication in the GoldenGate trail "
        "format, on Apache Spark.",
    )
    parser.add_argument("--version", action="version", version=f"trailgate {__version__}")
    parser.add_argument("--home", help="GoldenGate-style home directory (default: "
                        "$TRAILGATE_HOME or the current directory)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    top = parser.add_subparsers(dest="command", metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction] = {}
    for path, (module, func, help_text) in _COMMANDS.items():
        if len(path) == 1:
            sub = top.add_parser(path[0], help=help_text, description=help_text)
        else:
            if path[0] not in groups:
                grp = top.add_parser(path[0], help=f"{path[0]} commands")
                groups[path[0]] = grp.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
            sub = groups[path[0]].add_parser(path[1], help=help_text, description=help_text)
        sub.set_defaults(_target=(module, func))
        if selected is not None and selected != path[: len(selected)]:
            continue
        add_arguments = getattr(importlib.import_module(module), "add_arguments", None)
        if add_arguments is not None:
            add_arguments(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``trailgate`` with ``argv``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _build_parser(_selected(argv) or ("",))
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(message)s",
    )
    target = getattr(args, "_target", None)
    if target is None:
        parser.print_help()
        return 2
    module, func = target
    try:
        result = getattr(importlib.import_module(module), func)(args)
    except TrailgateError as exc:
        print(f"trailgate: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("trailgate: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
