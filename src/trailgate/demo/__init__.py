"""``trailgate demo``: seed 003 replicated end to end (see docs/demo.md), and the building
blocks the end-to-end tests and the apply benchmark share: embedded source and target
servers (:mod:`.databases`), the pipeline set up through GGSCI (:mod:`.pipeline`),
concurrent workloads (:mod:`.workload`) and type-aware table comparison (:mod:`.compare`).
"""

from __future__ import annotations

import argparse

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from trailgate.demo.app import add_arguments as add

    add(parser)


def run(args: argparse.Namespace) -> int:
    """Run the demo (``trailgate demo``)."""
    from trailgate.demo.app import run as run_demo

    return run_demo(args)
