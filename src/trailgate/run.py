"""``trailgate run extract|replicat NAME``: a group in the foreground (GGSCI START runs the same
command detached).  Ctrl-C or SIGTERM stops it cleanly; exit status 0 after a clean stop."""

from __future__ import annotations

import argparse
from typing import Any

from trailgate.errors import ConfigError
from trailgate.home import Home, validate_group_name

__all__ = ["add_arguments", "add_replicat_arguments", "run_extract", "run_named_group",
           "run_replicat"]


def _size(text: str) -> int:
    """``67108864``, ``64M``, ``1G``, ``512K``."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("B")
    try:
        if t and t[-1] in units:
            return int(float(t[:-1]) * units[t[-1]])
        return int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 64M)") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from trailgate.extract.postgres.config import DEFAULT_MEMORY_LIMIT

    if parser.prog.endswith(" replicat"):  # one module serves both ``run`` commands
        add_replicat_arguments(parser)
        return

    parser.add_argument("name", metavar="NAME", help="the Extract group")
    parser.add_argument("--once", action="store_true",
                        help="capture what is committed now, then stop")
    parser.add_argument("--max-batches", type=int, metavar="N",
                        help="stop cleanly after N micro-batches")
    parser.add_argument("--memory-limit", type=_size, default=DEFAULT_MEMORY_LIMIT,
                        metavar="SIZE", help="memory for one transaction before it is "
                        "spilled to dirtmp/ (default 64M)")
    parser.add_argument("--trigger", type=float, metavar="SECONDS",
                        help="seconds between micro-batches (default: SPARK TRIGGER, else 1)")
    parser.add_argument("--max-wal-bytes", type=_size, metavar="SIZE",
                        help="WAL range of one micro-batch at most (transactions stay whole)")


def run_extract(args: argparse.Namespace) -> int:
    """Run the Extract group ``args.name`` until it is stopped (a Data Pump when the group
    reads a trail: ADD EXTRACT name, EXTTRAILSOURCE ...)."""
    from trailgate.extract.postgres.group import RunOptions, run_extract_group

    home = Home.locate(getattr(args, "home", None))
    name = validate_group_name(args.name)
    info = home.group(name)
    if info is not None and info.kind == "EXTRACT" and info.source == "EXTTRAILSOURCE":
        from trailgate.pump.group import run_pump

        return run_pump(home, name, args)
    if info is not None and info.kind == "EXTRACT" and info.source == "SOURCEISTABLE":
        from trailgate.load.group import run_load

        return run_load(home, name)
    opts = RunOptions(once=args.once, max_batches=args.max_batches,
                      memory_limit_bytes=args.memory_limit, trigger_seconds=args.trigger,
                      max_wal_bytes=args.max_wal_bytes)
    from trailgate.extract.oracle.dumps import is_oracle_group
    from trailgate.extract.oracle.group import run_oracle_extract

    if is_oracle_group(home, info):  # ADD EXTRACT …, DUMPDIR / TRANLOGOPTIONS DUMPDIR
        return run_oracle_extract(home, name, opts)
    return run_extract_group(home, name, opts)


def add_replicat_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="the Replicat group")
    parser.add_argument("--once", action="store_true",
                        help="apply what the trail holds now, then stop")
    parser.add_argument("--max-batches", type=int, metavar="N",
                        help="stop cleanly after N micro-batches with data")
    parser.add_argument("--trigger", type=float, metavar="SECONDS",
                        help="seconds between micro-batches (default: SPARK TRIGGER, else 1)")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--atcsn", type=int, metavar="CSN",
                       help="skip transactions with a lower CSN (START REPLICAT …, ATCSN)")
    start.add_argument("--aftercsn", type=int, metavar="CSN",
                       help="skip transactions up to this CSN (START REPLICAT …, AFTERCSN)")


def run_replicat(args: argparse.Namespace) -> int:
    """Run the Replicat group ``args.name`` until it is stopped."""
    from trailgate.replicat.group import RunOptions, run_replicat_group

    home = Home.locate(getattr(args, "home", None))
    name = validate_group_name(args.name)
    opts = RunOptions(once=args.once, max_batches=args.max_batches,
                      trigger_seconds=args.trigger, atcsn=args.atcsn,
                      aftercsn=args.aftercsn)
    return run_replicat_group(home, name, opts)


def run_named_group(home: Home, name: str, *, once: bool = False,
                    max_batches: int | None = None, spark: Any = None) -> int:
    """Run group ``name`` of ``home`` in this process, whatever its kind: an Extract
    (PostgreSQL or Oracle redo dumps), a Data Pump or a Replicat (``trailgate.api``)."""
    name = validate_group_name(name)
    info = home.group(name)
    if info is None:
        raise ConfigError(f"no group {name} in {home.path}: ADD EXTRACT or ADD REPLICAT it "
                          f"first (GGSCI)")
    if info.kind == "REPLICAT":
        from trailgate.replicat.group import RunOptions as ReplicatOptions
        from trailgate.replicat.group import run_replicat_group

        return run_replicat_group(home, name, ReplicatOptions(once=once,
                                                              max_batches=max_batches),
                                  spark=spark)
    if info.source == "SOURCEISTABLE":
        from trailgate.load.group import LoadOptions, run_load

        return run_load(home, name, LoadOptions(spark=spark))
    if info.source == "EXTTRAILSOURCE":
        from trailgate.pump.group import run_pump

        return run_pump(home, name, argparse.Namespace(once=once, max_batches=max_batches,
                                                       trigger=None), spark=spark)
    from trailgate.extract.oracle.dumps import is_oracle_group
    from trailgate.extract.postgres.group import RunOptions, run_extract_group

    opts = RunOptions(once=once, max_batches=max_batches)
    if is_oracle_group(home, info):
        from trailgate.extract.oracle.group import run_oracle_extract

        return run_oracle_extract(home, name, opts, spark=spark)
    return run_extract_group(home, name, opts, spark=spark)
